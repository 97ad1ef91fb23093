// The reflector plugin SDK (ABI v1): values, results, guards and registration. A plugin
// calls reflector(manifest, forward, backward?) and re-exports "./exports"; docs/plugin-abi.md.
import { Value, Writer } from "./json";
import "./abort/abort"; // linked as abort through `use` in the SDK's asconfig.json
export { Value, Kind, Writer, parse, parseString, validate } from "./json";
export { log, Level, translateIp, translateIpValue, lookup } from "./host";

export const ABI_VERSION: i32 = 1;
export const LABEL_MANAGED_BY = "liqo.io/managed-by";
export const MANAGED_BY_REFLECTION = "reflection";
export const LABEL_ORIGIN = "liqo.io/origin-cluster-id";
export const ANNOTATION_SKIP = "liqo.io/skip-reflection";

/** The call context (see docs/plugin-abi.md for the fields); sent by the host once per change. */
export class Context {
  constructor(public raw: Value) {}
  get localClusterId(): string { return this.raw.get("localClusterId").str(); }
  get remoteClusterId(): string { return this.raw.get("remoteClusterId").str(); }
  get localNamespace(): string { return this.raw.get("localNamespace").str(); }
  get remoteNamespace(): string { return this.raw.get("remoteNamespace").str(); }
  get virtualNodeName(): string { return this.raw.get("virtualNodeName").str(); }
  get virtualKubeletIp(): string { return this.raw.get("virtualKubeletIp").str(); }
  get storageClass(): string { return this.raw.get("storageClass").str(); }
  get remoteRestarts(): i64 { return this.raw.get("remoteRestarts").int(); }
  /** Any other field, for plugin-specific settings the engine passes through. */
  get(key: string): Value { return this.raw.get(key); }
}

/** What the host knows about the object a decision would write (computed from its labels). */
export enum Target { Absent = 0, Owned = 1, Foreign = 2 }

/**
 * One call's input. Forward: `local` is the source (projected to the declared fields),
 * `remote` the current remote copy (only if the resource declares targetFields, else Null)
 * and `target` its state. Backward: `remote` is the source, `local` the target.
 */
export class Input {
  constructor(public ctx: Context, public local: Value, public remote: Value, public target: Target) {}
}

/**
 * What a transform answers. For `apply`, either edits (JSON-pointer set/remove, applied by
 * the host to its base copy: the object never round-trips) or a whole object (withObject).
 * Edits are written straight into the answer as compact tuples: [path] removes, [path, value]
 * sets; no tree is built for them.
 */
export class Result {
  decision: string = "skip";
  reason: string = "";
  error: string = "";
  object: Value | null = null;
  private edits: Writer | null = null;
  private rawDecision: bool = false;

  static apply(reason: string = ""): Result { const r = new Result(); r.decision = "apply"; r.reason = reason; return r; }
  static delete(reason: string): Result { const r = new Result(); r.decision = "delete"; r.reason = reason; return r; }
  static skip(reason: string): Result { const r = new Result(); r.decision = "skip"; r.reason = reason; return r; }
  /** The input cannot be transformed; the host reports it as the object's problem, not the plugin's. */
  static fail(message: string): Result { const r = new Result(); r.error = message; return r; }

  private edit(pointer: string): Writer {
    let w = this.edits;
    if (w == null) { w = new Writer(512); this.edits = w; } else w.byte(0x2c);
    w.byte(0x5b);
    w.str(pointer);
    return w;
  }
  set(pointer: string, value: Value): Result {
    const w = this.edit(pointer);
    w.byte(0x2c); value.write(w); w.byte(0x5d);
    return this;
  }
  remove(pointer: string): Result { this.edit(pointer).byte(0x5d); return this; }
  withObject(obj: Value): Result { this.object = obj; return this; }
  /** Test fixtures only: writes the decision text unescaped, producing invalid JSON. */
  withDecision(raw: string): Result { this.decision = raw; this.rawDecision = true; return this; }

  write(w: Writer): void {
    if (this.error.length > 0) { w.raw("{\"error\":"); w.str(this.error); w.byte(0x7d); return; }
    w.raw("{\"decision\":");
    if (this.rawDecision) { w.byte(0x22); w.raw(this.decision); w.byte(0x22); } else w.str(this.decision);
    w.raw(",\"reason\":"); w.str(this.reason);
    const obj = this.object;
    if (obj != null) { w.raw(",\"object\":"); obj.write(w); }
    else {
      w.raw(",\"edits\":[");
      const e = this.edits;
      if (e != null) w.bytes(e.ptr, e.len);
      w.byte(0x5d);
    }
    w.byte(0x7d);
  }
}

/** JSON-pointer segment escaping (RFC 6901): label keys such as "liqo.io/x" contain '/'. */
export function ptr(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

export function annotation(obj: Value, key: string): Value { return obj.get("metadata").get("annotations").get(key); }
export function label(obj: Value, key: string): Value { return obj.get("metadata").get("labels").get(key); }

/** Liqo's opt-out: any value other than "false" disables reflection of the object. */
export function isSkipAnnotated(obj: Value): bool {
  const v = annotation(obj, ANNOTATION_SKIP);
  return v.isString() && !v.is("false");
}

/** True when a remote object carries our ownership labels for this origin cluster. */
export function isOwned(remote: Value, ctx: Context): bool {
  return label(remote, LABEL_MANAGED_BY).is(MANAGED_BY_REFLECTION)
    && label(remote, LABEL_ORIGIN).is(ctx.localClusterId);
}

/**
 * The guards every forward transform starts with: never touch a remote object we do not
 * own, reflect local deletions, honour liqo.io/skip-reflection. Null means "go on".
 */
export function forwardGuards(input: Input): Result | null {
  if (input.target == Target.Foreign) {
    return Result.skip("conflict: remote object exists and is not managed by liqo reflection for this cluster");
  }
  if (input.local.isNull()) return Result.delete("local object deleted");
  if (!input.local.isObject() || !input.local.get("metadata").isObject()) return Result.fail("object has no metadata");
  if (isSkipAnnotated(input.local)) return Result.delete("annotated " + ANNOTATION_SKIP);
  return null;
}

export type Transform = (input: Input) => Result;

/** The answer for a direction the plugin did not register. */
export function unsupported(input: Input): Result { return Result.fail("this plugin has no transform for this direction"); }

// Set once by reflector() from the plugin's top-level code (the start function).
export let registeredManifest: string = "";
export let forwardTransform: Transform = unsupported;
export let backwardTransform: Transform = unsupported;

/**
 * Declares the plugin: its manifest (JSON, see docs/plugin-abi.md) and its transforms.
 * Call it once at the top level of the plugin's entry file, and re-export "./exports".
 */
export function reflector(manifest: string, forward: Transform, backward: Transform = unsupported): void {
  registeredManifest = manifest;
  forwardTransform = forward;
  backwardTransform = backward;
}
