// Serialized forms of what the host sends plugins, cached so that re-sending costs nothing.
import type { KubeObject, ReflectionContext } from "./abi.ts";
import { project } from "./objects.ts";

// Objects from the informers' caches are immutable (an informer replaces, never edits, what it
// holds), so their serialized forms are cached on the object, checked against its
// resourceVersion: re-reflecting an unchanged object (a resync, a remote-side event, a retry)
// and the look-ups of one ServiceAccount by every pod pay the JSON.stringify once. Objects
// without a resourceVersion (built by hand, never stored by the API server) are not cached.
const versionOf = (obj: KubeObject): string | undefined => {
  const rv = obj.metadata?.resourceVersion;
  return typeof rv === "string" && rv !== "" ? rv : undefined;
};
const lookupBytes = new WeakMap<object, { rv: string; bytes: Uint8Array }>();
const textEncoder = new TextEncoder();
export function encodedObject(obj: KubeObject): Uint8Array | string {
  const rv = versionOf(obj);
  if (rv === undefined) return JSON.stringify(obj);
  const hit = lookupBytes.get(obj);
  if (hit !== undefined && hit.rv === rv) return hit.bytes;
  const bytes = textEncoder.encode(JSON.stringify(obj));
  lookupBytes.set(obj, { rv, bytes });
  return bytes;
}

/** The JSON sent for `obj` projected to `fields` (undefined = whole), cached per object, version and field list. */
const payloads = new WeakMap<object, { rv: string; fields: readonly string[] | undefined; json: string }>();
export function payloadJson(obj: KubeObject, fields: readonly string[] | undefined): string {
  const rv = versionOf(obj);
  if (rv === undefined) return JSON.stringify(project(obj, fields));
  const hit = payloads.get(obj);
  if (hit !== undefined && hit.rv === rv && hit.fields === fields) return hit.json;
  const json = JSON.stringify(project(obj, fields));
  payloads.set(obj, { rv, fields, json });
  return json;
}

const ctxJson = new WeakMap<ReflectionContext, string>();
let lastCtx: ReflectionContext | null = null;
let lastCtxJson = "";
export function contextJson(ctx: ReflectionContext): string {
  if (ctx === lastCtx) return lastCtxJson;
  let s = ctxJson.get(ctx);
  if (s === undefined) { s = JSON.stringify(ctx); ctxJson.set(ctx, s); }
  lastCtx = ctx;
  lastCtxJson = s;
  return s;
}
