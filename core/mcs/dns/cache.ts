// The caches the clusterset.local zone is answered from: ServiceImports, and the imported
// EndpointSlices (labelled multicluster.kubernetes.io/service-name), indexed by service so a query
// reads only its own service's slices.
import { MCS_SERVICE_NAME_LABEL, MCS_SOURCE_CLUSTER_LABEL } from "../../apis/multicluster/group.ts";
import { ServiceImportResource, type ServiceImport } from "../../apis/multicluster/serviceimport.ts";
import type { KubeClient } from "../../kube/client.ts";
import { createInformer } from "../../kube/informer.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { SliceLike } from "../plan.ts";
import type { ImportedSlice, ZoneView } from "./records.ts";

type SvcImport = ServiceImport & KubeObject;

/** An imported slice as the zone reads it; undefined for a slice with no source cluster. */
export function importedSlice(s: SliceLike): ImportedSlice | undefined {
  const cluster = s.metadata.labels?.[MCS_SOURCE_CLUSTER_LABEL];
  if (!cluster) return undefined;
  return {
    cluster,
    ports: (s.ports ?? []).map((p) => ({ name: p.name, port: p.port, protocol: p.protocol })),
    endpoints: (s.endpoints ?? []).map((e) => ({
      addresses: e.addresses ?? [],
      // The EndpointSlice API: a ready condition left out means ready.
      ready: e.conditions?.ready !== false,
      hostname: e.hostname,
    })),
  };
}

export function createZoneCache(client: KubeClient, logger: Logger = silentLogger) {
  const imports = createInformer<SvcImport>({ client, resource: ServiceImportResource, logger });
  const slices = createInformer<SliceLike>({
    client,
    resource: Resources.endpointSlices,
    labelSelector: MCS_SERVICE_NAME_LABEL,
    logger,
  });
  /** namespace/service → slice name → the slice as the zone reads it. */
  const byService = new Map<string, Map<string, ImportedSlice>>();
  const serviceOf = (s: SliceLike) => `${s.metadata.namespace}/${s.metadata.labels?.[MCS_SERVICE_NAME_LABEL]}`;
  const put = (s: SliceLike) => {
    const k = serviceOf(s);
    const z = importedSlice(s);
    let m = byService.get(k);
    if (!z) {
      m?.delete(s.metadata.name!);
      return;
    }
    if (!m) byService.set(k, (m = new Map()));
    m.set(s.metadata.name!, z);
  };
  const drop = (s: SliceLike) => {
    const k = serviceOf(s);
    const m = byService.get(k);
    m?.delete(s.metadata.name!);
    if (m && !m.size) byService.delete(k);
  };
  slices.on({
    add: put,
    update: (o, n) => {
      if (serviceOf(o) !== serviceOf(n)) drop(o);
      put(n);
    },
    delete: drop,
  });

  const view: ZoneView = {
    serviceImport: (ns, name) => imports.get(`${ns}/${name}`),
    slices: (ns, name) => [...(byService.get(`${ns}/${name}`)?.values() ?? [])],
    hasNamespace: (ns) => imports.keys().some((k) => k.startsWith(`${ns}/`)),
  };
  return {
    view,
    synced: () => imports.synced && slices.synced,
    start() {
      imports.start();
      slices.start();
    },
    waitForSync: (ms: number) => Promise.all([imports.waitForSync(ms), slices.waitForSync(ms)]).then(() => {}),
    async stop() {
      await Promise.all([imports.stop(), slices.stop()]);
    },
  };
}
