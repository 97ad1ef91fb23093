// The controller manager's view of the plugin store: watches the plugin ConfigMaps, validates
// each new or changed module in a worker (validate.ts: start function and trial calls under a
// deadline), and tells its listeners, so every peering's virtual kubelet hot-loads, replaces or
// stops drop-ins without a restart. A module that fails validation is reported, never loaded.
import { createInformer } from "../../kube/informer.ts";
import type { KubeClient } from "../../kube/client.ts";
import { keyOf, Resources, type KubeObject } from "../../kube/resources.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { Manifest } from "../abi.ts";
import { validatePlugin } from "../validate.ts";
import { PLUGIN_LABEL, storedPlugin } from "./configmap.ts";

export interface ReadyPlugin {
  name: string;
  configMap: string;
  /** Changes with the bytes: a virtual kubelet reloads the plugin when it does. */
  hash: string;
  bytes: Uint8Array;
  manifest: Manifest;
}

export interface PluginProblem {
  configMap: string;
  name?: string;
  error: string;
}

export interface PluginStore {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Validated plugins, one per manifest name (the oldest ConfigMap wins a clash). */
  ready(): ReadyPlugin[];
  problems(): PluginProblem[];
  /** What a ResourceRequest asks the provider to grant (spec.reflectorPlugins). */
  requests(): {
    name: string;
    version: string;
    resources: { group: string; version: string; kind: string; direction: "forward" | "backward" | "both" }[];
  }[];
  onChange(listener: () => void): void;
}

export function createPluginStore(o: { client: KubeClient; namespace: string; logger?: Logger }): PluginStore {
  const log = (o.logger ?? silentLogger).child({ component: "plugin-store", namespace: o.namespace });
  const informer = createInformer({
    client: o.client,
    resource: Resources.configMaps,
    namespace: o.namespace,
    labelSelector: `${PLUGIN_LABEL}=true`,
    logger: log,
  });
  /** By ConfigMap name: the verdict on its current bytes. */
  const verdicts = new Map<
    string,
    { hash: string; plugin?: ReadyPlugin; error?: string; name?: string; created: string }
  >();
  const listeners: (() => void)[] = [];
  let work: Promise<void> = Promise.resolve();

  async function examine(cm: KubeObject) {
    const s = storedPlugin(cm);
    const name = cm.metadata.name!;
    const created = cm.metadata.creationTimestamp ?? "";
    if ("error" in s) {
      verdicts.set(name, { hash: "", error: s.error, created });
      return;
    }
    const hash = Bun.hash(s.bytes).toString(16);
    if (verdicts.get(name)?.hash === hash) return;
    const verdict = await validatePlugin(s.bytes, { label: `ConfigMap ${o.namespace}/${name}` });
    if (!informer.get(keyOf(o.namespace, name))) return; // deleted while it was being validated
    if (verdict.ok) {
      verdicts.set(name, {
        hash,
        created,
        name: verdict.manifest.name,
        plugin: { name: verdict.manifest.name, configMap: name, hash, bytes: s.bytes, manifest: verdict.manifest },
      });
      log.info("reflector plugin validated", {
        key: name,
        plugin: verdict.manifest.name,
        version: verdict.manifest.version,
      });
    } else {
      verdicts.set(name, { hash, created, name: verdict.manifest?.name, error: verdict.problems.join("; ") });
      log.warn("reflector plugin rejected", { key: name, problems: verdict.problems });
    }
  }

  // One at a time, in order: validation runs a worker per module.
  function enqueue(step: () => Promise<void> | void) {
    work = work
      .then(step)
      .catch((err) => log.error("plugin store update failed", { err }))
      .then(() => {
        for (const l of listeners) l();
      });
  }
  informer.on({
    add: (cm) => enqueue(() => examine(cm)),
    update: (_, cm) => enqueue(() => examine(cm)),
    delete: (cm) =>
      enqueue(() => {
        verdicts.delete(cm.metadata.name!);
        log.info("reflector plugin removed from the store", { key: cm.metadata.name });
      }),
  });

  function winners(): { ready: ReadyPlugin[]; problems: PluginProblem[] } {
    const ready: ReadyPlugin[] = [];
    const problems: PluginProblem[] = [];
    const sorted = [...verdicts.entries()].sort(
      ([a, x], [b, y]) => x.created.localeCompare(y.created) || a.localeCompare(b),
    );
    for (const [configMap, v] of sorted) {
      if (!v.plugin) {
        problems.push({ configMap, name: v.name, error: v.error ?? "not validated yet" });
        continue;
      }
      const kinds = (p: ReadyPlugin) => p.manifest.resources.map((r) => `${r.group}/${r.kind}`);
      const clash = ready.find((r) => r.name === v.plugin!.name || kinds(r).some((k) => kinds(v.plugin!).includes(k)));
      if (clash) {
        problems.push({
          configMap,
          name: v.plugin.name,
          error: `plugin ${v.plugin.name} clashes with plugin ${clash.name} of ConfigMap ${clash.configMap} (same name or kind); remove one of them`,
        });
        continue;
      }
      ready.push(v.plugin);
    }
    return { ready, problems };
  }

  return {
    async start() {
      informer.start();
      await informer.waitForSync();
    },
    async stop() {
      await informer.stop();
    },
    ready: () => winners().ready,
    problems: () => winners().problems,
    requests: () =>
      winners().ready.map((p) => ({
        name: p.name,
        version: p.manifest.version,
        resources: p.manifest.resources.map((r) => ({
          group: r.group,
          version: r.version,
          kind: r.kind,
          direction: r.direction,
        })),
      })),
    onChange: (l) => void listeners.push(l),
  };
}
