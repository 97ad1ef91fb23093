// The network manager: the IPAM persisted in IpamStorage, one reconcile per peering (peering.ts)
// and the NatMappings, driven by informers that only enqueue keys. Peers come from setPeers()
// until the peering controller drives them.
import { NetworkConfigResource, type NetworkConfig } from "../../core/apis/net/networkconfig.ts";
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { NatMappingResource, NAT_MAPPING_LABEL } from "../../core/apis/net/natmapping.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { createInformer, type Informer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createWorkQueue } from "../../core/kube/workqueue.ts";
import { silentLogger, type Logger } from "../../core/log.ts";
import type { Registry } from "../../core/metrics/index.ts";
import type { IpTranslator } from "../../core/reflection/abi.ts";
import { createEventRecorder } from "../../core/kube/events.ts";
import type { IpamOptions } from "../ipam/index.ts";
import { networkConfigRole, type LocalNetworkParameters, type Peer } from "./forge.ts";
import { CLUSTER_ID_LABEL, KEYS_LABEL, PUBLIC_KEY_FIELD, ENDPOINT_ANNOTATION, endpointOf } from "../shared/labels.ts";
import { createIpamStore, type IpamStore } from "./ipam-store.ts";
import { desiredNatMappings, dropEndpointRequests, syncNatMappings } from "./natmappings.ts";
import { reconcilePeer, type PeerState } from "./peering.ts";
import { createIpTranslator } from "./translator.ts";
import { requestedEndpoints } from "./translation-watch.ts";

export interface NetworkManagerOptions {
  client: KubeClient;
  /** Where the gateway keeps its WireGuard key Secret (label net.liqo.io/key). */
  liqoNamespace: string;
  ipam: IpamOptions;
  /** The gateway's address and port as peers reach it; without it, the address the gateway
   * leader writes on its key Secret (annotation net.liqo.io/gateway-endpoint) is used. */
  gatewayEndpoint?: { ip: string; port: number };
  peers?: Peer[];
  logger?: Logger;
  registry?: Registry;
  /** Informer resync, so drift (a hand-deleted TunnelEndpoint) is repaired even without events. */
  resyncMs?: number;
}

export interface NetworkManager {
  readonly store: IpamStore;
  start(): Promise<void>;
  stop(): Promise<void>;
  setPeers(peers: Peer[]): void;
  peers(): Peer[];
  peerStates(): PeerState[];
  /** The translator for one peering's reflectors. */
  translator(remoteClusterId: string): IpTranslator;
  synced(): boolean;
  /** Resolves when no reconcile is queued or running. */
  idle(): Promise<void>;
  networkConfigs(): NetworkConfig[];
  tunnelEndpoints(): TunnelEndpoint[];
}

const NATMAPPINGS_KEY = "natmappings";
const peerKey = (id: string) => `peer:${id}`;

function decodePublicKey(secret: KubeObject): string {
  const data = (secret as { data?: Record<string, string> }).data ?? {};
  const encoded = data[PUBLIC_KEY_FIELD];
  if (!encoded)
    throw new Error(`Secret ${secret.metadata.namespace}/${secret.metadata.name} has no data.${PUBLIC_KEY_FIELD}`);
  const key = Buffer.from(encoded, "base64").toString("utf8").trim();
  if (Buffer.from(key, "base64").length !== 32) {
    throw new Error(
      `Secret ${secret.metadata.namespace}/${secret.metadata.name}: ${PUBLIC_KEY_FIELD} is not a base64 WireGuard public key (32 bytes); let the gateway regenerate it by deleting the Secret`,
    );
  }
  return key;
}

/** A just-installed CRD answers 429/503 for a moment, and an API server may be restarting. */
async function loadWithRetry(store: IpamStore, log: Logger, deadlineMs = 120_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (let delay = 200; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      return await store.load();
    } catch (err) {
      const transient = err instanceof KubeApiError && (err.status === 0 || err.status === 429 || err.status >= 500);
      if (!transient || Date.now() + delay > deadline) throw err;
      log.warn("reading IpamStorage failed; retrying", { err: (err as Error).message, retryInMs: delay });
      await Bun.sleep(delay);
    }
  }
}

export function createNetworkManager(options: NetworkManagerOptions): NetworkManager {
  const { client } = options;
  const log = (options.logger ?? silentLogger).child({ component: "network-manager" });
  const store = createIpamStore({ client, ipam: options.ipam, logger: log });
  const events = createEventRecorder(client, "liqo-network-manager", log);
  let peers = new Map((options.peers ?? []).map((p) => [p.remoteClusterId, p]));
  const states = new Map<string, PeerState>();
  const resyncMs = options.resyncMs ?? 60_000;

  const informers = {
    networkConfigs: createInformer<NetworkConfig>({ client, resource: NetworkConfigResource, resyncMs, logger: log }),
    tunnelEndpoints: createInformer<TunnelEndpoint>({
      client,
      resource: TunnelEndpointResource,
      labelSelector: CLUSTER_ID_LABEL,
      resyncMs,
      logger: log,
    }),
    natMappings: createInformer({
      client,
      resource: NatMappingResource,
      labelSelector: `${NAT_MAPPING_LABEL.key}=${NAT_MAPPING_LABEL.value}`,
      resyncMs,
      logger: log,
    }),
    keys: createInformer({
      client,
      resource: Resources.secrets,
      namespace: options.liqoNamespace,
      labelSelector: KEYS_LABEL,
      logger: log,
    }),
  };

  const reconciles = options.registry?.counter({
    name: "liqo_network_manager_reconciles_total",
    help: "Peering and NatMapping reconciles by outcome.",
    labelNames: ["outcome"] as const,
  });
  options.registry?.callbackGauge({
    name: "liqo_network_manager_peers",
    help: "Peers by phase.",
    labelNames: ["phase"] as const,
    collect: () => {
      const counts = new Map<string, number>();
      for (const s of states.values()) counts.set(s.phase, (counts.get(s.phase) ?? 0) + 1);
      return [...counts].map(([phase, value]) => ({ labels: { phase }, value }));
    },
  });
  options.registry?.callbackCounter({
    name: "liqo_network_manager_ipam_writes_total",
    help: "IpamStorage writes.",
    collect: () => store.stats.writes,
  });
  options.registry?.callbackCounter({
    name: "liqo_network_manager_ipam_conflicts_total",
    help: "IpamStorage writes that met a newer version and were retried.",
    collect: () => store.stats.conflicts,
  });

  function localParameters(): LocalNetworkParameters | string {
    const secrets = informers.keys.list();
    if (secrets.length === 0) {
      return `waiting for the gateway's WireGuard key Secret (label ${KEYS_LABEL}) in namespace ${options.liqoNamespace}`;
    }
    let publicKey: string;
    try {
      publicKey = decodePublicKey(secrets[0]!);
    } catch (err) {
      return (err as Error).message;
    }
    let endpoint = options.gatewayEndpoint;
    if (!endpoint) {
      const written = endpointOf(secrets[0]!);
      const m = written ? /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(written) : null;
      if (!m) {
        return written
          ? `the gateway endpoint ${JSON.stringify(written)} on Secret ${secrets[0]!.metadata.namespace}/${secrets[0]!.metadata.name} is not ipv4:port; fix the gateway's --endpoint`
          : `waiting for the gateway to publish its endpoint (annotation ${ENDPOINT_ANNOTATION} on the key Secret) or --gateway-endpoint`;
      }
      endpoint = { ip: m[1]!, port: Number(m[2]) };
    }
    return {
      podCidr: store.ipam.localPodCidr,
      externalCidr: store.ipam.localExternalCidr,
      endpointIp: endpoint.ip,
      port: endpoint.port,
      publicKey,
    };
  }

  /**
   * Addresses other processes (virtual kubelets' translation watchers) asked for on NatMappings:
   * allocated here, persisted in IpamStorage; syncNatMappings then writes them and drops the requests.
   */
  async function fulfilEndpointRequests() {
    const wanted: { clusterId: string; ip: string; name: string }[] = [];
    const mapped = (clusterId: string) =>
      store.ipam.natMappings().find((n) => n.clusterId === clusterId)?.clusterMappings ?? {};
    for (const m of informers.natMappings.list()) {
      const clusterId = m.metadata.labels?.[CLUSTER_ID_LABEL];
      if (!clusterId || !peers.has(clusterId)) continue;
      const known = mapped(clusterId);
      for (const ip of requestedEndpoints(m.metadata.annotations))
        if (known[ip] === undefined) wanted.push({ clusterId, ip, name: m.metadata.name! });
    }
    if (wanted.length === 0) return;
    const errors = new Map<string, string>();
    await store.update("allocate requested endpoint addresses", (ipam) => {
      errors.clear();
      for (const w of wanted) {
        try {
          ipam.endpointIpFor(w.clusterId, w.ip);
        } catch (err) {
          errors.set(`${w.clusterId}/${w.ip}`, (err as Error).message);
        }
      }
    });
    // A request that allocates nothing (malformed, or an address that needs no external-CIDR
    // address) is dropped, so it is not retried forever; a watcher asks again if it still needs it.
    for (const w of wanted) {
      if (mapped(w.clusterId)[w.ip] !== undefined) continue;
      const reason = errors.get(`${w.clusterId}/${w.ip}`) ?? "the address needs no external-CIDR address";
      log.warn("endpoint address request dropped", { peer: w.clusterId, ip: w.ip, key: w.name, err: reason });
      await dropEndpointRequests(client, w.name, [w.ip]);
    }
  }

  const queue = createWorkQueue({
    name: "network-manager",
    workers: 2,
    baseDelayMs: 200,
    maxDelayMs: 30_000,
    logger: log,
    observe: (_key, outcome) => reconciles?.inc({ outcome }),
    handler: async (key) => {
      if (key === NATMAPPINGS_KEY) {
        await fulfilEndpointRequests();
        await syncNatMappings(
          client,
          desiredNatMappings(store.ipam, (id) => peers.has(id)),
          log,
        );
        return;
      }
      const clusterId = key.slice("peer:".length);
      const state = await reconcilePeer(
        { client, store, events, logger: log.child({ peer: clusterId }), localParameters },
        clusterId,
        peers.get(clusterId),
      );
      if (state.phase === "Removed") states.delete(clusterId);
      else states.set(clusterId, state);
      queue.add(NATMAPPINGS_KEY);
    },
  });

  const enqueuePeer = (id: string | undefined) => {
    if (id) queue.add(peerKey(id));
  };
  informers.networkConfigs.on({
    add: (o) => enqueuePeer(networkConfigRole(o.metadata.labels)?.clusterId),
    update: (_, o) => enqueuePeer(networkConfigRole(o.metadata.labels)?.clusterId),
    delete: (o) => enqueuePeer(networkConfigRole(o.metadata.labels)?.clusterId),
  });
  const byClusterLabel = (o: KubeObject) => enqueuePeer(o.metadata.labels?.[CLUSTER_ID_LABEL]);
  informers.tunnelEndpoints.on({ add: byClusterLabel, update: (_, o) => byClusterLabel(o), delete: byClusterLabel });
  const natChanged = () => queue.add(NATMAPPINGS_KEY);
  informers.natMappings.on({ add: natChanged, update: natChanged, delete: natChanged });
  const allPeers = () => {
    for (const id of peers.keys()) enqueuePeer(id);
  };
  informers.keys.on({ add: allPeers, update: allPeers, delete: allPeers });
  store.onChange(natChanged);

  let started = false;
  return {
    store,
    async start() {
      await loadWithRetry(store, log);
      for (const i of Object.values(informers)) i.start();
      await Promise.all(Object.values(informers).map((i) => i.waitForSync(120_000)));
      started = true;
      queue.start();
      // Everything we may have left behind for a peer that is gone is found and cleaned up.
      const known = new Set<string>([...peers.keys(), ...Object.keys(store.ipam.snapshot().clusters)]);
      for (const o of informers.networkConfigs.list()) {
        const r = networkConfigRole(o.metadata.labels);
        if (r) known.add(r.clusterId);
      }
      for (const o of informers.tunnelEndpoints.list())
        if (o.metadata.labels?.[CLUSTER_ID_LABEL]) known.add(o.metadata.labels[CLUSTER_ID_LABEL]!);
      for (const id of known) enqueuePeer(id);
      queue.add(NATMAPPINGS_KEY);
      log.info("network manager started", {
        peers: peers.size,
        podCidr: store.ipam.localPodCidr,
        externalCidr: store.ipam.localExternalCidr,
      });
    },
    async stop() {
      await queue.shutdown();
      await Promise.all(Object.values(informers).map((i) => i.stop()));
    },
    setPeers(next) {
      const old = peers;
      peers = new Map(next.map((p) => [p.remoteClusterId, p]));
      for (const id of new Set([...old.keys(), ...peers.keys()])) {
        const before = old.get(id);
        const after = peers.get(id);
        if (JSON.stringify(before) !== JSON.stringify(after)) enqueuePeer(id);
      }
    },
    peers: () => [...peers.values()],
    peerStates: () => [...states.values()].sort((a, b) => a.clusterId.localeCompare(b.clusterId)),
    translator: (remoteClusterId) =>
      createIpTranslator(() => store.ipam, remoteClusterId, {
        onAllocate: (replay) => store.noteInPlaceChange(replay),
        onError: (err, ip, direction) =>
          log.warn("address not translated", { peer: remoteClusterId, ip, direction, err: err.message }),
      }),
    synced: () => started && Object.values(informers).every((i: Informer<KubeObject>) => i.synced),
    idle: () => queue.idle(),
    networkConfigs: () => informers.networkConfigs.list(),
    tunnelEndpoints: () => informers.tunnelEndpoints.list(),
  };
}
