// The reflection policy in force, from the ConfigMap liqo-reflection-policy of the liqo namespace
// (the chart writes it from `reflection.policy`, `liqoctl install --reflection-policy` sets those
// values, `liqoctl status` shows it). One key per kind, the mode as its value. A change applies at
// once to every virtual kubelet, also to what is already reflected. A ConfigMap that names an
// unknown kind or mode is refused: the last good policy stays, and the ConfigMap gets a Warning
// Event saying what to fix.
import type { KubeClient } from "../kube/client.ts";
import { createInformer } from "../kube/informer.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import { createEventRecorder } from "./engine/events.ts";
import {
  admits,
  DEFAULT_POLICY,
  formatReflectionPolicy,
  parseReflectionPolicy,
  ReflectionPolicyError,
  type ReflectionPolicy,
} from "./policy.ts";

export const POLICY_CONFIGMAP = "liqo-reflection-policy";

export interface ReflectionPolicySource {
  current(): ReflectionPolicy;
  admits(kind: string, obj: KubeObject): boolean;
  /** Called after the policy changed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  /** Why the ConfigMap's content is not in force, if it is not. */
  problem(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A fixed policy (the `liqo virtual-kubelet` role, tests). */
export function fixedReflectionPolicy(policy: ReflectionPolicy = DEFAULT_POLICY): ReflectionPolicySource {
  return {
    current: () => policy,
    admits: (k, o) => admits(policy, k, o),
    onChange: () => () => {},
    problem: () => undefined,
    start: async () => {},
    stop: async () => {},
  };
}

/** The ConfigMap's policy, or the error that refuses it; no ConfigMap: the defaults. */
export function policyFromConfigMap(
  cm: (KubeObject & { data?: Record<string, string> }) | undefined,
  namespace: string,
): ReflectionPolicy {
  return cm ? parseReflectionPolicy(cm.data ?? {}, `ConfigMap ${namespace}/${POLICY_CONFIGMAP}`) : DEFAULT_POLICY;
}

export function watchReflectionPolicy(o: {
  client: KubeClient;
  namespace: string;
  logger?: Logger;
}): ReflectionPolicySource {
  const log = (o.logger ?? silentLogger).child({ component: "reflection-policy" });
  const events = createEventRecorder(o.client, "liqo-controller-manager", log);
  const listeners = new Set<() => void>();
  let policy = DEFAULT_POLICY;
  let problem: string | undefined;
  const informer = createInformer<KubeObject & { data?: Record<string, string> }>({
    client: o.client,
    resource: Resources.configMaps,
    namespace: o.namespace,
    fieldSelector: `metadata.name=${POLICY_CONFIGMAP}`,
    logger: log,
  });
  const update = (cm: (KubeObject & { data?: Record<string, string> }) | undefined) => {
    let next: ReflectionPolicy;
    try {
      next = policyFromConfigMap(cm, o.namespace);
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
    for (const l of listeners) l();
  };
  informer.on({ add: update, update: (_a, b) => update(b), delete: () => update(undefined) });
  return {
    current: () => policy,
    admits: (kind, obj) => admits(policy, kind, obj),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    problem: () => problem,
    async start() {
      informer.start();
      await informer.waitForSync(60_000);
    },
    stop: () => informer.stop(),
  };
}
