// Grants a remote cluster its rights in each twin namespace it creates here. The peer may create
// only namespaces labelled with its own ID (the admission policy in rbac.ts); this controller
// binds liqo-virtual-kubelet-remote in them for that peer, and nothing else. Level-triggered:
// every twin namespace is (re)checked on start, on change and when a tenant namespace appears.
import { DISCOVERY_CLUSTER_ID_LABEL, REMOTE_CLUSTER_ID_LABEL, TENANT_NAMESPACE_LABEL } from "../../apis/labels.ts";
import type { KubeClient } from "../../kube/client.ts";
import { createInformer } from "../../kube/informer.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { createWorkQueue } from "../../kube/workqueue.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { grantTwinNamespace } from "./tenant.ts";

export interface TwinBinder {
  start(): Promise<void>;
  stop(): Promise<void>;
  idle(): Promise<void>;
  readonly synced: boolean;
}

export function createTwinBinder(o: { client: KubeClient; logger?: Logger }): TwinBinder {
  const log = (o.logger ?? silentLogger).child({ component: "twin-binder" });
  const twins = createInformer({
    client: o.client,
    resource: Resources.namespaces,
    labelSelector: REMOTE_CLUSTER_ID_LABEL,
    logger: log,
  });
  const tenants = createInformer({
    client: o.client,
    resource: Resources.namespaces,
    labelSelector: `${TENANT_NAMESPACE_LABEL},${DISCOVERY_CLUSTER_ID_LABEL}`,
    logger: log,
  });
  const queue = createWorkQueue({
    name: "twin-binder",
    logger: log,
    async handler(name) {
      const ns = twins.get(name);
      const id = ns?.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL];
      if (!ns || !id) return;
      if (await grantTwinNamespace(o.client, id, name))
        log.debug("twin namespace granted", { key: name, remoteClusterId: id });
    },
  });
  const enqueue = (ns: KubeObject) => queue.add(ns.metadata.name!);
  twins.on({ add: enqueue, update: (_, ns) => enqueue(ns) });
  tenants.on({
    add(tenant) {
      const id = tenant.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL];
      for (const twin of twins.list()) if (twin.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === id) enqueue(twin);
    },
  });
  return {
    async start() {
      twins.start();
      tenants.start();
      await Promise.all([twins.waitForSync(), tenants.waitForSync()]);
      queue.start();
    },
    async stop() {
      await queue.shutdown();
      await Promise.all([twins.stop(), tenants.stop()]);
    },
    idle: () => queue.idle(),
    get synced() {
      return twins.synced && tenants.synced;
    },
  };
}
