// One definition per kind yields everything else: the parser (valibot), the TypeScript type
// (inferred from the parser), the CRD manifest (derived from the parser) and the ResourceRef the
// client uses. Nothing about a kind is written twice.
import * as v from "valibot";
import type { KubeObject, ObjectMeta, ResourceRef } from "../kube/resources.ts";
import { objectMeta } from "./fields.ts";
import { toOpenApi, type OpenApiSchema } from "./openapi.ts";
import { issuesOf, parseAs, type FieldIssue } from "./validation.ts";

export const VERSION = "v1alpha1";

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  /** 0 shows in `kubectl get`; higher only with `-o wide`. */
  priority?: number;
  description?: string;
}

export interface CustomResourceDefinition extends KubeObject {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: ObjectMeta & { name: string };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories?: string[];
    };
    scope: "Namespaced" | "Cluster";
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: OpenApiSchema };
      subresources?: { status?: Record<string, never> };
      additionalPrinterColumns?: PrinterColumn[];
    }[];
  };
}

export interface KindOptions<Spec extends v.GenericSchema, Status extends v.GenericSchema | undefined> {
  group: string;
  kind: string;
  plural: string;
  scope: "Namespaced" | "Cluster";
  description: string;
  shortNames?: string[];
  /** Liqo puts most kinds in the `liqo` category, so `kubectl get liqo` lists them. */
  categories?: string[];
  printerColumns?: PrinterColumn[];
  spec: Spec;
  /** Whether the object must have a spec (Liqo requires it only for NamespaceOffloading). */
  specRequired?: boolean;
  status?: Status;
  /** Whether status is a subresource; Liqo enables it on every kind that has a status. */
  statusSubresource?: boolean;
}

function rootSchema<Spec extends v.GenericSchema, Status extends v.GenericSchema | undefined>(
  o: KindOptions<Spec, Status>,
) {
  const apiVersion = `${o.group}/${VERSION}`;
  return v.object({
    apiVersion: v.optional(
      v.pipe(
        v.string(),
        v.check((s) => s === apiVersion, `must be ${apiVersion}`),
      ),
    ),
    kind: v.optional(
      v.pipe(
        v.string(),
        v.check((s) => s === o.kind, `must be ${o.kind}`),
      ),
    ),
    metadata: objectMeta,
    // The server accepts most kinds without a spec; parsing a missing one as {} reports its
    // required fields by name instead of handing a controller an undefined spec.
    spec: (o.specRequired ? o.spec : v.optional(o.spec, {})) as Spec,
    status: v.optional(
      (o.status ?? v.object({})) as Status extends v.GenericSchema ? Status : v.ObjectSchema<{}, undefined>,
    ),
  });
}

function crdOf<Spec extends v.GenericSchema, Status extends v.GenericSchema | undefined>(
  o: KindOptions<Spec, Status>,
): CustomResourceDefinition {
  const at = o.kind;
  const properties: Record<string, OpenApiSchema> = {
    apiVersion: { type: "string", description: "The versioned schema of this representation of an object." },
    kind: { type: "string", description: "The REST resource this object represents." },
    metadata: { type: "object" },
    spec: toOpenApi(o.spec, `${at}.spec`),
  };
  if (o.status) properties.status = toOpenApi(o.status, `${at}.status`);
  const openAPIV3Schema: OpenApiSchema = { type: "object", description: o.description, properties };
  if (o.specRequired) openAPIV3Schema.required = ["spec"];
  const singular = o.kind.toLowerCase();
  const names: CustomResourceDefinition["spec"]["names"] = {
    kind: o.kind,
    listKind: `${o.kind}List`,
    plural: o.plural,
    singular,
  };
  if (o.shortNames?.length) names.shortNames = o.shortNames;
  if (o.categories?.length) names.categories = o.categories;
  const version: CustomResourceDefinition["spec"]["versions"][number] = {
    name: VERSION,
    served: true,
    storage: true,
    schema: { openAPIV3Schema },
  };
  if (o.status && o.statusSubresource !== false) version.subresources = { status: {} };
  if (o.printerColumns?.length) version.additionalPrinterColumns = o.printerColumns;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${o.plural}.${o.group}`, labels: { "app.kubernetes.io/part-of": "liqo" } },
    spec: { group: o.group, names, scope: o.scope, versions: [version] },
  };
}

export function defineKind<Spec extends v.GenericSchema, Status extends v.GenericSchema | undefined = undefined>(
  o: KindOptions<Spec, Status>,
) {
  const schema = rootSchema(o);
  const resource: ResourceRef = {
    group: o.group,
    version: VERSION,
    plural: o.plural,
    kind: o.kind,
    namespaced: o.scope === "Namespaced",
  };
  return {
    kind: o.kind,
    group: o.group,
    apiVersion: `${o.group}/${VERSION}`,
    resource,
    schema,
    crd: crdOf(o),
    /** Validates user or peer input and fills Liqo's defaults, as the API server would. */
    parse: (input: unknown): v.InferOutput<typeof schema> => parseAs(o.kind, schema, input),
    /** Every bad field, or an empty list. */
    issues: (input: unknown): FieldIssue[] => issuesOf(schema, input),
  };
}
