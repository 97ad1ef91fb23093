// Shared pieces of the plain-TypeScript twins: the oracle tests compare each plugin against
// its twin, and the benchmark measures both on the same objects.
import { isOwnedBy } from "../core/reflection/finish.ts";
import { ANNOTATION_SKIP, type Decision, type KubeObject, type ReflectionContext } from "../core/reflection/abi.ts";

export type Twin = (
  source: KubeObject | null,
  target: KubeObject | null,
  ctx: ReflectionContext,
  translateIp?: (ip: string) => string,
) => Decision;

/** The forward guards, as the SDK's forwardGuards does them. */
export function forwardGuards(
  local: KubeObject | null,
  remote: KubeObject | null,
  ctx: ReflectionContext,
): Decision | null {
  if (remote && !isOwnedBy(remote, ctx.localClusterId))
    return {
      decision: "skip",
      reason: "conflict: remote object exists and is not managed by liqo reflection for this cluster",
    };
  if (!local) return { decision: "delete", reason: "local object deleted" };
  const skip = local.metadata?.annotations?.[ANNOTATION_SKIP];
  if (skip !== undefined && skip !== "false") return { decision: "delete", reason: `annotated ${ANNOTATION_SKIP}` };
  return null;
}

export function without<T extends Record<string, unknown>>(obj: T | undefined, keys: readonly string[]): T | undefined {
  if (!obj) return obj;
  const out = { ...obj };
  for (const k of keys) delete out[k];
  return out;
}
