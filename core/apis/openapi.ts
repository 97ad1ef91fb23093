// The CRD's structural OpenAPI v3 schema, derived from the same valibot schema that validates
// input, so the API server and our parsers can never disagree about names, enums or defaults.
//
// What reaches the API server: object entries (required unless optional), records, arrays,
// picklists (enum), optional defaults, regex (pattern), integer, minValue/maxValue,
// isoTimestamp (date-time), description, and `v.metadata({ openapi })` for what valibot cannot
// say (formats, int-or-string). Everything else, `v.check` in particular, is client-only: that is
// where we are stricter than Liqo's CRDs without making the server reject what Liqo accepted.
import type * as v from "valibot";

export interface OpenApiSchema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  properties?: Record<string, OpenApiSchema>;
  required?: string[];
  items?: OpenApiSchema;
  additionalProperties?: OpenApiSchema;
  enum?: unknown[];
  default?: unknown;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  anyOf?: OpenApiSchema[];
  nullable?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  /** CEL rules the API server enforces (transition rules compare with oldSelf on updates). */
  "x-kubernetes-validations"?: { rule: string; message: string; reason?: string; fieldPath?: string }[];
}

/** What `v.metadata(...)` may carry for the CRD generator. */
export interface CrdMetadata {
  /** Merged over the derived node; for a union it is the whole node. */
  openapi?: OpenApiSchema;
  /** Listed in the parent's `required` although it has a default (Liqo does this for status enums). */
  crdRequired?: boolean;
}

// valibot's schema objects are plain data; this is the part of them the generator reads.
interface Node {
  kind: string;
  type: string;
  entries?: Record<string, Node>;
  item?: Node;
  value?: Node;
  wrapped?: Node;
  options?: unknown[];
  default?: unknown;
  pipe?: Node[];
  requirement?: unknown;
  description?: string;
  metadata?: CrdMetadata;
}

const OPTIONAL = new Set(["optional", "exact_optional", "nullish", "undefinedable"]);

export function isOptional(schema: v.GenericSchema): boolean {
  return OPTIONAL.has((schema as unknown as Node).type);
}

function metadataOf(node: Node): CrdMetadata {
  const out: CrdMetadata = {};
  for (const item of node.pipe ?? [])
    if (item.kind === "metadata" && item.type === "metadata") Object.assign(out, item.metadata);
  return out;
}

/** The OpenAPI node for one valibot schema; `at` names the field in errors. */
export function toOpenApi(schema: v.GenericSchema, at = "(root)"): OpenApiSchema {
  const node = schema as unknown as Node;
  const meta = metadataOf(node);
  let out: OpenApiSchema;
  switch (node.type) {
    case "optional":
    case "exact_optional":
    case "nullish":
    case "undefinedable": {
      out = toOpenApi(node.wrapped as unknown as v.GenericSchema, at);
      if (node.default !== undefined) {
        if (typeof node.default === "function") throw new Error(`${at}: a CRD default must be a value, not a function`);
        out = { ...out, default: node.default };
      }
      break;
    }
    case "object":
    case "loose_object":
    case "strict_object": {
      const properties: Record<string, OpenApiSchema> = {};
      const required: string[] = [];
      for (const [key, entry] of Object.entries(node.entries ?? {})) {
        properties[key] = toOpenApi(entry as unknown as v.GenericSchema, `${at}.${key}`);
        if (!isOptional(entry as unknown as v.GenericSchema) || metadataOf(entry).crdRequired) required.push(key);
      }
      out = { type: "object" };
      if (Object.keys(properties).length) out.properties = properties;
      if (required.length) out.required = required.sort();
      if (node.type === "loose_object") out["x-kubernetes-preserve-unknown-fields"] = true;
      break;
    }
    case "record":
      out = { type: "object", additionalProperties: toOpenApi(node.value as unknown as v.GenericSchema, `${at}[*]`) };
      break;
    case "array":
      out = { type: "array", items: toOpenApi(node.item as unknown as v.GenericSchema, `${at}[]`) };
      break;
    case "picklist":
      out = { type: "string", enum: [...(node.options ?? [])] };
      break;
    case "string":
      out = { type: "string" };
      break;
    case "boolean":
      out = { type: "boolean" };
      break;
    case "number":
      out = { type: "number" };
      break;
    case "union":
      if (!meta.openapi) throw new Error(`${at}: a union needs v.metadata({ openapi }) to say how the CRD spells it`);
      return { ...meta.openapi, ...descriptionOf(node) };
    default:
      throw new Error(
        `${at}: valibot schema type "${node.type}" has no CRD equivalent; add it to core/apis/openapi.ts`,
      );
  }
  for (const action of node.pipe ?? []) {
    if (action.kind === "schema") continue;
    switch (action.type) {
      case "regex":
        out.pattern = (action.requirement as RegExp).source;
        break;
      case "integer":
        out.type = "integer";
        break;
      case "min_value":
        out.minimum = action.requirement as number;
        break;
      case "max_value":
        out.maximum = action.requirement as number;
        break;
      case "iso_timestamp":
        out.format = "date-time";
        break;
    }
  }
  return { ...out, ...descriptionOf(node), ...meta.openapi };
}

function descriptionOf(node: Node): { description?: string } {
  const d =
    (node.pipe ?? []).find((a) => a.type === "description")?.description ??
    (node.wrapped ? descriptionOf(node.wrapped).description : undefined);
  return d ? { description: d } : {};
}
