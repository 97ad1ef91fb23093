// Turns a plugin's raw answer into a Decision, and refuses answers that would write outside
// the namespace pair, for another cluster, for an undeclared kind, or over an object the
// project does not own. The plugin is never trusted to have done the checks itself.
import {
  LABEL_MANAGED_BY,
  LABEL_ORIGIN,
  MANAGED_BY_REFLECTION,
  apiVersionOf,
  type Decision,
  type Direction,
  type Edit,
  type KubeObject,
  type ReflectionContext,
  type Resource,
} from "./abi.ts";
import { PluginError, objectKey } from "./errors.ts";
import { EditShapeError, applyEdits, baseCopy } from "./objects.ts";

export interface CallFacts {
  plugin: string;
  direction: Direction;
  resource: Resource;
  /** The object the transform reads: local for forward, remote for backward. */
  source: KubeObject | null;
  /** The object the decision would write: remote for forward, local for backward. */
  target: KubeObject | null;
  ctx: ReflectionContext;
}

const DECISIONS = new Set(["apply", "delete", "skip"]);

export function isOwnedBy(obj: KubeObject, originClusterId: string): boolean {
  const l = obj.metadata?.labels;
  return l?.[LABEL_MANAGED_BY] === MANAGED_BY_REFLECTION && l?.[LABEL_ORIGIN] === originClusterId;
}

/** What the plugin is told of the target: 0 absent, 1 ours (from `originClusterId`), 2 foreign. */
export function targetState(target: KubeObject | null, originClusterId: string): number {
  return target === null ? 0 : isOwnedBy(target, originClusterId) ? 1 : 2;
}

/** Backward Pod-like transforms write only the status subresource of the user's object. */
export function writesStatusOnly(f: Pick<CallFacts, "direction" | "resource">): boolean {
  return f.direction === "backward" && f.resource.kind === "Pod";
}

function failure(f: CallFacts, code: "invalid-output" | "violation" | "invalid-input", msg: string): PluginError {
  const key = objectKey(f.source) ?? objectKey(f.target) ?? "(no object)";
  return new PluginError(code, f.plugin, `${msg} (object ${key}, ${f.direction})`, { object: key });
}

const invalidJson = (text: string, err: unknown) =>
  `answered invalid JSON: ${(err as Error).message}; the answer began ${JSON.stringify(text.slice(0, 60))}`;

/**
 * What an answer says, checked once: everything about it that does not depend on the call's
 * objects. Many calls share one answer (equal answer texts, memoized answers), so finishing a
 * call is only the part that reads its objects (finishPlan).
 */
export interface Plan {
  /** The answer is wrong whatever the objects: reported as is. */
  error: { code: "invalid-output" | "invalid-input"; message: string } | null;
  decision: "apply" | "delete" | "skip";
  reason: string;
  /** A whole object answered instead of edits. */
  object: unknown;
  edits: Edit[];
  /** An apply answer that cannot be applied (malformed edits, an object that is no object). */
  applyError: string | null;
  /** The edits touch apiVersion, kind, the name, the namespace or the ownership labels. */
  identity: boolean;
  /** Every edit is at or under /status: a status-only write needs no copy of the rest. */
  statusEdits: boolean;
}

const errorPlan = (code: "invalid-output" | "invalid-input", message: string): Plan => ({
  error: { code, message },
  decision: "skip",
  reason: "",
  object: undefined,
  edits: noEdits,
  applyError: null,
  identity: false,
  statusEdits: false,
});

/** The plan of a parsed answer. */
function planOf(parsed: unknown): Plan {
  const raw = parsed as Record<string, unknown>;
  if (raw === null || typeof raw !== "object")
    return errorPlan("invalid-output", "answered a JSON value that is not an object");
  return makePlan(raw);
}

/** The plan of an answer text (invalid JSON is a plan too: the plugin's error, for every call that gets it). */
export function planOfText(text: string): Plan {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return errorPlan("invalid-output", invalidJson(text, err));
  }
  return planOf(parsed);
}

function makePlan(raw: Record<string, unknown>): Plan {
  if (typeof raw.error === "string") return errorPlan("invalid-input", `rejected the object: ${raw.error}`);
  const decision = raw.decision;
  if (typeof decision !== "string" || !DECISIONS.has(decision))
    return errorPlan("invalid-output", `answered decision ${JSON.stringify(decision)}; expected apply, delete or skip`);
  const plan: Plan = {
    error: null,
    decision: decision as Plan["decision"],
    reason: typeof raw.reason === "string" ? raw.reason : "",
    object: raw.object,
    edits: noEdits,
    applyError: null,
    identity: false,
    statusEdits: false,
  };
  if (decision !== "apply") return plan;
  try {
    if (raw.object !== undefined) {
      if (!raw.object || typeof raw.object !== "object" || Array.isArray(raw.object))
        throw new Error("answered an object that is not a JSON object");
    } else {
      plan.edits = checkEdits(raw.edits);
      plan.identity = plan.edits.some((e) => touchesIdentity(e[0]));
      plan.statusEdits = plan.edits.every((e) => e[0] === "/status" || e[0].startsWith("/status/"));
    }
  } catch (err) {
    plan.applyError = (err as Error).message;
  }
  return plan;
}

/**
 * A planned answer to this call's Decision: the checks that read the call's objects, the base
 * copy, the edits. Pure in (plan, facts) and never changes the plan: a memoized answer is
 * finished again, against each call's own objects.
 */
export function finishPlan(plan: Plan, f: CallFacts): Decision {
  if (plan.error !== null) throw failure(f, plan.error.code, plan.error.message);
  const decision = plan.decision;
  const reason = plan.reason;
  const origin = f.direction === "forward" ? f.ctx.localClusterId : f.ctx.remoteClusterId;
  const statusOnly = writesStatusOnly(f);
  if (decision !== "skip" && f.target && !statusOnly && !isOwnedBy(f.target, origin)) {
    throw failure(
      f,
      "violation",
      `decided ${decision} over an object it does not own (no ${LABEL_MANAGED_BY}=${MANAGED_BY_REFLECTION}, ${LABEL_ORIGIN}=${origin}); the answer must be skip with reason "conflict"`,
    );
  }
  if (decision !== "apply") return { decision, reason };
  if (!f.source) throw failure(f, "invalid-output", "decided apply without a source object");
  if (plan.applyError !== null) throw failure(f, "invalid-output", plan.applyError);

  const namespaced = f.resource.namespaced !== false;
  const targetNs = f.direction === "forward" ? f.ctx.remoteNamespace : f.ctx.localNamespace;
  // A status-only write keeps the name, the namespace and the status: with edits only there,
  // it is made from those alone (what statusOf keeps of the whole copy).
  const slim = statusOnly && plan.statusEdits && plan.object === undefined;
  let object: KubeObject;
  try {
    object = slim
      ? applyEdits(statusBase(f.source, namespaced ? targetNs : undefined), plan.edits)
      : plan.object !== undefined
        ? normalizeObject(plan.object, namespaced ? targetNs : undefined, origin)
        : applyEdits(
            baseCopy(f.source, namespaced ? targetNs : undefined, origin, f.direction === "backward"),
            plan.edits,
          );
  } catch (err) {
    if (err instanceof EditShapeError)
      throw failure(f, "invalid-input", `the object's shape does not fit the answer: ${err.message}`);
    throw failure(f, "invalid-output", (err as Error).message);
  }
  const m = object.metadata ?? {};
  // Edits that stay clear of apiVersion, kind and metadata leave the base copy's identity as it
  // was built: the source's kind (the host matched it to the resource), its name, the target
  // namespace and the ownership labels. Only other answers need the checks below.
  if (slim) return { decision: "apply", reason, object };
  if (plan.object === undefined && !plan.identity)
    return statusOnly ? statusOf(object, reason) : { decision: "apply", reason, object };
  if (object.apiVersion !== apiVersionOf(f.resource) || object.kind !== f.resource.kind) {
    throw failure(
      f,
      "violation",
      `answered a ${object.apiVersion}/${object.kind}, but the call was for ${apiVersionOf(f.resource)}/${f.resource.kind}`,
    );
  }
  if (typeof m.name !== "string" || m.name === "")
    throw failure(f, "invalid-output", "answered an object without metadata.name");
  if (namespaced ? m.namespace !== targetNs : m.namespace !== undefined) {
    throw failure(
      f,
      "violation",
      `answered an object in namespace ${JSON.stringify(m.namespace)}; only ${JSON.stringify(namespaced ? targetNs : undefined)} is allowed`,
    );
  }
  if (!isOwnedBy(object, origin)) {
    throw failure(
      f,
      "violation",
      `answered an object labelled for cluster ${JSON.stringify(m.labels?.[LABEL_ORIGIN])}; it must carry ${LABEL_ORIGIN}=${origin}`,
    );
  }
  if (statusOnly) return statusOf(object, reason);
  return { decision: "apply", reason, object };
}

/** What a status-only write sends, before the edits: the identity and the source's status. */
function statusBase(source: KubeObject, namespace: string | undefined): KubeObject {
  const metadata: NonNullable<KubeObject["metadata"]> = { name: source.metadata?.name };
  if (namespace !== undefined) metadata.namespace = namespace;
  return { apiVersion: source.apiVersion, kind: source.kind, metadata, status: source.status };
}

function statusOf(object: KubeObject, reason: string): Decision {
  const m = object.metadata!;
  return {
    decision: "apply",
    reason,
    object: {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: { name: m.name, namespace: m.namespace },
      status: object.status,
    },
  };
}

/**
 * What the identity checks above guard, as JSON pointers. An edit touches them when it is one
 * of them, inside one, or an ancestor of one (replacing /metadata/labels wholesale, say); an
 * edit elsewhere (annotations, other labels, the spec) cannot change them.
 */
const IDENTITY = [
  "/apiVersion",
  "/kind",
  "/metadata/name",
  "/metadata/namespace",
  "/metadata/labels/liqo.io~1managed-by",
  "/metadata/labels/liqo.io~1origin-cluster-id",
];
/** `inner` is `outer` or a pointer under it. */
const within = (inner: string, outer: string) =>
  inner.startsWith(outer) && (inner.length === outer.length || inner[outer.length] === "/");
const touchesIdentity = (path: string) => path === "" || IDENTITY.some((id) => within(id, path) || within(path, id));
const noEdits: Edit[] = [];

function checkEdits(edits: unknown): Edit[] {
  if (edits === undefined) return noEdits;
  if (!Array.isArray(edits)) throw new Error("answered edits that are not an array");
  for (const e of edits) {
    if (!Array.isArray(e) || typeof e[0] !== "string" || e.length < 1 || e.length > 2) {
      throw new Error(
        `answered a malformed edit ${JSON.stringify(e)}; expected ["/json/pointer"] (remove) or ["/json/pointer", value] (set)`,
      );
    }
    // A __proto__ member would set a container's prototype instead of a member: never valid in an API object.
    if (/(^|\/)__proto__(\/|$)/.test(e[0]))
      throw new Error(`answered an edit at ${JSON.stringify(e[0])}: __proto__ is not a member an API object can have`);
  }
  return edits as Edit[];
}

/** A whole object from the plugin: server-managed metadata dropped, target namespace filled in if absent. */
function normalizeObject(obj: unknown, namespace: string | undefined, origin: string): KubeObject {
  const o = obj as KubeObject;
  const m = o.metadata ?? {};
  const metadata: NonNullable<KubeObject["metadata"]> = { name: m.name };
  const ns = m.namespace ?? namespace;
  if (ns !== undefined) metadata.namespace = ns;
  metadata.labels = { [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION, [LABEL_ORIGIN]: origin, ...m.labels };
  if (m.annotations) metadata.annotations = m.annotations;
  return { ...o, metadata };
}
