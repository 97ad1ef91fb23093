// Field builders shared by every kind. Each returns a valibot schema whose messages say what a
// valid value looks like, so an error names the field (the path is added by validation.ts) and
// the fix. Checks written with `v.check` stay client-side (see openapi.ts).
import * as v from "valibot";
import type { ObjectMeta } from "../kube/resources.ts";

/** A plain string with a description for `kubectl explain`. */
export const text = (description: string) => v.pipe(v.string(), v.description(description));

export const optionalText = (description: string) => v.optional(text(description));

/** One of a fixed set of strings; the message lists them. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, description: string) {
  return v.pipe(
    v.picklist(values, (issue) => `must be one of ${values.join(", ")} (got ${issue.received})`),
    v.description(description),
  );
}

/** An enum with the default Liqo gives it; `crdRequired` keeps it in the CRD's required list as Liqo does. */
export function oneOfWithDefault<const T extends readonly [string, ...string[]]>(
  values: T,
  fallback: T[number],
  description: string,
  crdRequired = false,
) {
  return v.pipe(v.optional(oneOf(values, description), fallback), v.metadata({ crdRequired }));
}

/** A Kubernetes timestamp (metav1.Time): RFC 3339 in UTC or with an offset. */
export const timestamp = (description: string) =>
  v.pipe(
    v.string(),
    v.isoTimestamp("must be an RFC 3339 timestamp such as 2022-05-05T15:08:33Z"),
    v.description(description),
  );

export const stringMap = (description: string) => v.pipe(v.record(v.string(), v.string()), v.description(description));

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * A cluster ID: Liqo generates a UUID; it travels as the value of the liqo.io/remote-cluster-id
 * label, so anything that is not a non-empty label value would break the virtual node.
 */
export const clusterId = (description = "The unique identifier of the cluster (a UUID in Liqo).") =>
  v.pipe(
    v.string(),
    v.check(
      (s) => s.length > 0 && s.length <= 63 && LABEL_VALUE.test(s),
      "must be a cluster ID such as 4858caa2-7848-4aab-a6b4-6984389bac56: 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    ),
    v.description(description),
  );

/** A cluster name: `liqoctl install` requires a DNS-1123 label, as it becomes part of node and namespace names. */
export const clusterName = (description = "The human-readable name of the cluster.") =>
  v.pipe(
    v.string(),
    v.check(
      (s) => s.length > 0 && s.length <= 63 && DNS_LABEL.test(s),
      "must be a DNS-1123 label such as milan: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit",
    ),
    v.description(description),
  );

function isCidr(s: string): boolean {
  const [ip, bits, extra] = s.split("/");
  if (extra !== undefined || ip === undefined || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(ip))
    return ip.split(".").every((o) => Number(o) <= 255 && String(Number(o)) === o) && Number(bits) <= 32;
  return ip.includes(":") && /^[0-9a-fA-F:.]+$/.test(ip) && Number(bits) <= 128;
}

/**
 * A network in CIDR notation. Some fields also hold placeholders Liqo writes: "None" where no
 * remapping is needed (pkg/consts DefaultCIDRValue), "" in IpamStorage before a peer reported.
 */
export const cidr = (description: string, placeholders: readonly string[] = []) =>
  v.pipe(
    v.string(),
    v.check(
      (s) => placeholders.includes(s) || isCidr(s),
      `must be a network in CIDR notation such as 10.200.0.0/16${placeholders.length ? `, or ${placeholders.map((p) => JSON.stringify(p)).join(" or ")}` : ""}`,
    ),
    v.description(description),
  );

export const ipAddress = (description: string) =>
  v.pipe(
    v.string(),
    v.check((s) => isCidr(`${s}/${s.includes(":") ? 128 : 32}`), "must be an IP address such as 10.0.0.1"),
    v.description(description),
  );

const QUANTITY =
  /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;

/** A resource.Quantity ("2", "500m", "4Gi" or a number): int-or-string in the CRD, as Kubernetes spells it. */
export const quantity = () =>
  v.pipe(
    v.union(
      [v.pipe(v.string(), v.regex(QUANTITY, "must be a quantity such as 2, 500m or 4Gi")), v.number()],
      "must be a quantity such as 2, 500m or 4Gi",
    ),
    v.metadata({
      openapi: {
        anyOf: [{ type: "integer" }, { type: "string" }],
        pattern: QUANTITY.source,
        "x-kubernetes-int-or-string": true,
      },
    }),
  );

/** A core/v1 NodeSelector, as Liqo's NamespaceOffloading clusterSelector uses it. */
const selectorRequirement = v.object({
  key: text("The label key that the selector applies to."),
  operator: v.pipe(
    v.string(),
    v.check(
      (s) => ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"].includes(s),
      "must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt",
    ),
    v.description("How the key relates to the values: In, NotIn, Exists, DoesNotExist, Gt or Lt."),
  ),
  values: v.optional(v.pipe(v.array(v.string()), v.description("The values; empty for Exists and DoesNotExist."))),
});

export const nodeSelector = (description: string) =>
  v.pipe(
    v.object({
      nodeSelectorTerms: v.pipe(
        v.array(
          v.object({
            matchExpressions: v.optional(
              v.pipe(v.array(selectorRequirement), v.description("Requirements on node labels.")),
            ),
            matchFields: v.optional(
              v.pipe(v.array(selectorRequirement), v.description("Requirements on node fields.")),
            ),
          }),
        ),
        v.description("The terms are ORed; an empty list matches every cluster."),
      ),
    }),
    v.description(description),
  );

/** metadata is validated by the API server itself; we only need it to be an object with the usual shape. */
export const objectMeta = v.looseObject({
  name: v.optional(v.string()),
  namespace: v.optional(v.string()),
  labels: v.optional(v.record(v.string(), v.string())),
  annotations: v.optional(v.record(v.string(), v.string())),
}) as unknown as v.GenericSchema<ObjectMeta, ObjectMeta>;

/** A condition as Kubernetes writes them (type, status, lastTransitionTime, reason, message). */
export const conditionFields = {
  lastTransitionTime: v.optional(timestamp("When the condition last changed status.")),
  reason: optionalText("Machine-readable, UpperCamelCase reason for the last transition."),
  message: optionalText("Human-readable details about the last transition."),
};
