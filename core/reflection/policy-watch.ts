// The reflection policy in force, from the ConfigMap liqo-reflection-policy of the liqo namespace
// (the chart writes it from `reflection.policy`, `liqoctl install --reflection-policy` sets those
// values, `liqoctl status` shows it). One key per kind, the mode as its value. Namespaces override
// it for their objects with the annotation liqo.io/reflection-policy (`kind=mode,...`). A change
// of either applies at once to every virtual kubelet, also to what is already reflected. Input
// that names an unknown kind or mode, or a malformed selector, is refused: the last good policy
// (for a namespace: its last good override, else the cluster's) stays, and the ConfigMap or the
// namespace gets a Warning Event saying what to fix. The standalone `liqo virtual-kubelet` takes
// its cluster policy from --reflection-policy instead of the ConfigMap (`base`) and follows the
// namespaces' annotations the same way.
import type { KubeClient } from "../kube/client.ts";
import { createInformer } from "../kube/informer.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { EngineOptions } from "./engine/engine.ts";
import { createEventRecorder } from "../kube/events.ts";
import {
  createPolicyJudge,
  DEFAULT_POLICY,
  followersOf,
  formatReflectionPolicy,
  NAMESPACE_POLICY_ANNOTATION,
  NAMESPACE_POLICY_IN_FORCE_ANNOTATION,
  parsePolicyEntries,
  parseReflectionPolicy,
  ReflectionPolicyError,
  type LocalLookup,
  type PolicyOverride,
  type ReflectionPolicy,
} from "./policy.ts";

export const POLICY_CONFIGMAP = "liqo-reflection-policy";

export interface ReflectionPolicySource {
  current(): ReflectionPolicy;
  /** Namespaces overriding the cluster's policy, with the override in force (their last good one). */
  overrides(): ReadonlyMap<string, PolicyOverride>;
  /** `lookup` reads the local caches, for what an object follows (an EndpointSlice its Service). */
  admits(kind: string, obj: KubeObject, lookup?: LocalLookup): boolean;
  /** Called after the policy changed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  /** Why the ConfigMap's content is not in force, if it is not. */
  problem(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * What a reflection engine needs from a policy (EngineOptions): admits, with the engine's local
 * caches for what an object follows, and the followers to look at again when an object changes.
 * After the policy changes, the engine's requeueAll applies it to what is already reflected.
 */
export function policyEngineHooks(source: ReflectionPolicySource): Pick<EngineOptions, "admits" | "followers"> {
  return { admits: (kind, obj, lookup) => source.admits(kind, obj, lookup), followers: followersOf };
}

/** The ConfigMap's policy, or the error that refuses it; no ConfigMap: the defaults. */
export function policyFromConfigMap(
  cm: (KubeObject & { data?: Record<string, string> }) | undefined,
  namespace: string,
): ReflectionPolicy {
  return cm ? parseReflectionPolicy(cm.data ?? {}, `ConfigMap ${namespace}/${POLICY_CONFIGMAP}`) : DEFAULT_POLICY;
}

/** A namespace's override from its annotation (none: undefined), or the error that refuses it. */
export function overrideOfNamespace(ns: KubeObject): PolicyOverride | undefined {
  const text = ns.metadata.annotations?.[NAMESPACE_POLICY_ANNOTATION];
  if (text === undefined || !text.trim()) return undefined;
  return parsePolicyEntries(text, `namespace ${ns.metadata.name}: annotation ${NAMESPACE_POLICY_ANNOTATION}=${text}`);
}

export type WatchReflectionPolicyOptions = { client: KubeClient; logger?: Logger } & (
  | {
      /** The liqo namespace: its ConfigMap liqo-reflection-policy is the cluster's policy (the controller manager). */
      namespace: string;
      base?: undefined;
    }
  | {
      /**
       * A fixed cluster policy instead (the `liqo virtual-kubelet` role's --reflection-policy): no
       * ConfigMap is read, the namespaces' annotations are followed the same way.
       */
      base: ReflectionPolicy;
      namespace?: undefined;
    }
);

/** The cluster's policy (the ConfigMap's, or a fixed base) with the namespaces' overrides over it. */
export function watchReflectionPolicy(o: WatchReflectionPolicyOptions): ReflectionPolicySource {
  const log = (o.logger ?? silentLogger).child({ component: "reflection-policy" });
  // A fixed base is the standalone virtual kubelet's: its Events name it.
  const events = createEventRecorder(o.client, o.base ? "liqo-virtual-kubelet" : "liqo-controller-manager", log);
  const listeners = new Set<() => void>();
  let policy = o.base ?? DEFAULT_POLICY;
  let problem: string | undefined;
  const overrides = new Map<string, PolicyOverride>();
  let judge = createPolicyJudge(policy, overrides);
  const changed = () => {
    judge = createPolicyJudge(policy, overrides);
    for (const l of listeners) l();
  };
  const configMapNamespace = o.namespace;
  const informer =
    configMapNamespace === undefined
      ? undefined
      : createInformer<KubeObject & { data?: Record<string, string> }>({
          client: o.client,
          resource: Resources.configMaps,
          namespace: configMapNamespace,
          fieldSelector: `metadata.name=${POLICY_CONFIGMAP}`,
          logger: log,
        });
  const namespaces = createInformer<KubeObject>({ client: o.client, resource: Resources.namespaces, logger: log });
  const update = (cm: (KubeObject & { data?: Record<string, string> }) | undefined) => {
    let next: ReflectionPolicy;
    try {
      next = policyFromConfigMap(cm, configMapNamespace!);
    } catch (err) {
      if (!(err instanceof ReflectionPolicyError)) throw err;
      problem = `${err.message}; the policy in force stays ${formatReflectionPolicy(policy)}`;
      log.error("reflection policy refused", { reason: problem });
      if (cm) events.warning(cm, "InvalidReflectionPolicy", problem);
      return;
    }
    problem = undefined;
    if (formatReflectionPolicy(next) === formatReflectionPolicy(policy)) return;
    log.info("reflection policy changed", { from: formatReflectionPolicy(policy), to: formatReflectionPolicy(next) });
    policy = next;
    changed();
  };
  /** The override liqo recorded on the namespace as in force, if it still parses. */
  const inForce = (ns: KubeObject): PolicyOverride | undefined => {
    const text = ns.metadata.annotations?.[NAMESPACE_POLICY_IN_FORCE_ANNOTATION];
    if (!text) return undefined;
    try {
      return parsePolicyEntries(
        text,
        `namespace ${ns.metadata.name}: annotation ${NAMESPACE_POLICY_IN_FORCE_ANNOTATION}`,
      );
    } catch {
      return undefined;
    }
  };
  /** Keeps the namespace's in-force annotation equal to the accepted override (none: removed). */
  const record = (ns: KubeObject, next: PolicyOverride | undefined) => {
    const want = next ? formatReflectionPolicy(next) : undefined;
    if ((ns.metadata.annotations?.[NAMESPACE_POLICY_IN_FORCE_ANNOTATION] ?? undefined) === want) return;
    o.client
      .mergePatch(Resources.namespaces, ns.metadata.name!, undefined, {
        metadata: { annotations: { [NAMESPACE_POLICY_IN_FORCE_ANNOTATION]: want ?? null } },
      })
      .catch((err) =>
        log.warn("could not record the namespace's reflection policy in force", {
          namespace: ns.metadata.name,
          err: (err as Error).message,
        }),
      );
  };
  const updateNamespace = (ns: KubeObject, deleted = false) => {
    const name = ns.metadata.name!;
    let next: PolicyOverride | undefined;
    try {
      next = deleted ? undefined : overrideOfNamespace(ns);
    } catch (err) {
      if (!(err instanceof ReflectionPolicyError)) throw err;
      // Not seen since this process started (a restart): the override in force that liqo recorded.
      const recorded = overrides.has(name) ? undefined : inForce(ns);
      if (recorded) {
        overrides.set(name, recorded);
        changed();
      }
      const kept = overrides.get(name);
      const reason = `${err.message}; ${kept ? `this namespace keeps its previous override ${formatReflectionPolicy(kept)}` : "this namespace follows the cluster's policy"} until the annotation is fixed (kind=mode,..., kinds ${Object.keys(DEFAULT_POLICY).join(", ")}; modes all, opt-in, none, selector(<labels>))`;
      log.error("namespace reflection policy refused", { namespace: name, reason });
      events.warning(ns, "InvalidReflectionPolicy", reason);
      return;
    }
    if (!deleted) record(ns, next);
    const before = overrides.get(name);
    if (formatReflectionPolicy(next ?? {}) === formatReflectionPolicy(before ?? {}) && !!next === !!before) return;
    if (next) overrides.set(name, next);
    else overrides.delete(name);
    log.info("namespace reflection policy changed", {
      namespace: name,
      from: before && formatReflectionPolicy(before),
      to: next && formatReflectionPolicy(next),
    });
    changed();
  };
  informer?.on({ add: update, update: (_a, b) => update(b), delete: () => update(undefined) });
  namespaces.on({
    add: (ns) => updateNamespace(ns),
    update: (_a, b) => updateNamespace(b),
    delete: (ns) => updateNamespace(ns, true),
  });
  return {
    current: () => policy,
    overrides: () => overrides,
    admits: (kind, obj, lookup) => judge.admits(kind, obj, lookup),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    problem: () => problem,
    async start() {
      informer?.start();
      namespaces.start();
      await Promise.all([informer?.waitForSync(60_000), namespaces.waitForSync(60_000)]);
    },
    stop: async () => {
      await Promise.all([informer?.stop(), namespaces.stop()]);
    },
  };
}
