// Turning valibot issues into one error that names the object, every bad field and the fix.
import * as v from "valibot";

export interface FieldIssue {
  /** Dotted path of the field, e.g. `spec.clusterIdentity.clusterID`; `(root)` for the object itself. */
  path: string;
  message: string;
}

/** User or peer input that does not match a Liqo v0.5 API type. */
export class InvalidObjectError extends Error {
  override name = "InvalidObjectError";
  constructor(
    /** e.g. `ForeignCluster milan` or `ForeignCluster (unnamed)`. */
    readonly object: string,
    readonly issues: FieldIssue[],
  ) {
    super(
      `${object} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}; fix these fields and apply it again`,
    );
  }
}

function describeIssue(issue: v.BaseIssue<unknown>): string {
  // A missing key is reported by the parent object with the key as `expected`.
  if (
    (issue.type === "object" || issue.type === "loose_object" || issue.type === "strict_object") &&
    issue.received === "undefined" &&
    issue.path?.length
  ) {
    return "is required";
  }
  if (issue.kind === "schema" && issue.message.startsWith("Invalid type:")) {
    return `must be ${issue.expected === "Object" ? "an object" : `of type ${issue.expected}`} (got ${issue.received})`;
  }
  return issue.message;
}

export function fieldIssues(issues: readonly v.BaseIssue<unknown>[]): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of issues) {
    // A union's own issue hides the detail of its branches; report the branches instead when there are any.
    if (issue.type === "union" && issue.issues?.length && !issue.message.startsWith("must")) {
      out.push(...fieldIssues(issue.issues));
      continue;
    }
    out.push({ path: v.getDotPath(issue) ?? "(root)", message: describeIssue(issue) });
  }
  return out;
}

function label(kind: string, input: unknown): string {
  const meta = (input as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  const name = typeof meta?.name === "string" ? meta.name : "(unnamed)";
  return typeof meta?.namespace === "string" ? `${kind} ${meta.namespace}/${name}` : `${kind} ${name}`;
}

/** Parses and applies Liqo's defaults; throws InvalidObjectError listing every bad field. */
export function parseAs<S extends v.GenericSchema>(kind: string, schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  throw new InvalidObjectError(label(kind, input), fieldIssues(result.issues));
}

/** The same check without throwing: the list of bad fields, empty when the input is valid. */
export function issuesOf(schema: v.GenericSchema, input: unknown): FieldIssue[] {
  const result = v.safeParse(schema, input);
  return result.success ? [] : fieldIssues(result.issues);
}
