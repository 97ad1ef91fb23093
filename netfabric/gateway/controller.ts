// The gateway controller behind `liqo gateway`: every replica watches the TunnelEndpoints and
// NatMappings and competes for the Lease; only the holder opens the WireGuard device, reconciles
// it with the NAT table and the policy routing (netfabric/gateway/reconcile.ts, on events and on a
// timer, so hand-deleted rules come back), keeps the gateway's end of the overlay, publishes its
// endpoint and reports each tunnel on its TunnelEndpoint. A replica that loses the Lease tears
// its configuration down. In the IntraClusterTrafficSegregation security mode it also watches the
// pods, namespaces, NamespaceMaps and EndpointSlices the filter's sets come from (filter-table.ts).
import { NatMappingResource, NAT_MAPPING_LABEL, type NatMapping } from "../../core/apis/net/natmapping.ts";
import { REMOTE_CLUSTER_ID_LABEL, REPLICATION_STATUS_LABEL } from "../../core/apis/labels.ts";
import { NamespaceMapResource } from "../../core/apis/virtualkubelet/namespacemap.ts";
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { objectKey, Resources, type KubeObject } from "../../core/kube/resources.ts";
import { silentLogger, type Logger } from "../../core/log.ts";
import type { Registry } from "../../core/metrics/index.ts";
import { createEventRecorder } from "../../core/kube/events.ts";
import { CLUSTER_ID_LABEL, GATEWAY_SERVICE_NAME } from "../shared/labels.ts";
import { createIp } from "../os/ip.ts";
import { createNft } from "../os/nft.ts";
import { createCommandRunner, type CommandRunner } from "../os/run.ts";
import type { WireguardStatus } from "../os/wireguard-uapi.ts";
import {
  gatewayVxlan,
  GATEWAY_VTEP_ANNOTATION,
  NODE_VTEP_ANNOTATION,
  VXLAN_NAME,
  type OverlayEnd,
} from "../overlay/plan.ts";
import { reconcileVxlan } from "../overlay/vxlan.ts";
import { defaultGatewayOptions, tunnelMtu } from "./config.ts";
import { implementationOf, openDevice, teardown, type ActiveDevice, type WireguardMode } from "./device.ts";
import { exposeGateway, GATEWAY_ROLE_LABEL, WIREGUARD_IMPLEMENTATION_ANNOTATION, type Exposure } from "./exposure.ts";
import { ensureKeys, writeEndpoint } from "./keys.ts";
import { createLeaderElector, holderPodDead, podOfIdentity } from "./leader.ts";
import { createLoop } from "../shared/loop.ts";
import {
  DEFAULT_SECURITY_MODE,
  deleteFilterTableScript,
  peerFilterSets,
  slimEndpointSlice,
  slimPod,
  type FilterEndpointSlice,
  type FilterNamespaceMap,
  type FilterPod,
  type RejectCount,
  type SecurityMode,
} from "./filter-table.ts";
import { createGatewayReconciler, type SecuritySpec } from "./reconcile.ts";
import { registerImplementationMetric, registerPeerMetrics } from "./peer-metrics.ts";
import { ensureDeviceAddress, firstHost, probeLatency } from "./probe.ts";
import { connectionOf, sameConnection } from "./status.ts";
import { planTunnels, type TunnelPlan } from "./tunnel-config.ts";

export interface GatewayControllerOptions {
  client: KubeClient;
  liqoNamespace: string;
  identity: string;
  /** Network namespace the gateway configures (undefined: the current one). */
  netns?: string;
  device: string;
  listenPort: number;
  mtu?: number;
  /** Interface the encrypted packets leave through; its MTU sizes the tunnel's. */
  underlayDevice?: string;
  wireguard?: WireguardMode;
  /** ip:port announced to peers; without it the Service's load balancer or NodePort address. */
  endpoint?: string;
  /** WireGuard keepalive for every peer, seconds (0: off); defaults to `defaultKeepaliveSec`. */
  persistentKeepalive?: number;
  loadBalancerTimeoutMs?: number;
  /** This replica's pod (in liqoNamespace): labelled net.liqo.io/gateway-role active while it leads, standby otherwise. */
  podName?: string;
  nodeName?: string;
  /** The gateway's end of the in-cluster overlay. */
  overlay?: OverlayEnd;
  lease?: {
    name?: string;
    durationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
    standbyWaitMs?: number;
  };
  intervalMs?: number;
  handshakeTimeoutMs?: number;
  /** Liqo's networking.securityMode; FullPodToPod (the default) watches nothing more and has no filter table. */
  securityMode?: SecurityMode;
  runner?: CommandRunner;
  logger?: Logger;
  registry?: Registry;
}

export interface TunnelView {
  tunnelEndpoint: string;
  clusterId?: string;
  endpoint?: string;
  status: string;
  message: string;
  lastHandshake?: string;
  rxBytes?: number;
  txBytes?: number;
  /** Round trip of one ICMP echo through the tunnel at the last pass. */
  latencyMs?: number;
}

export function createGatewayController(o: GatewayControllerOptions) {
  const { client } = o;
  const log = (o.logger ?? silentLogger).child({ component: "gateway", identity: o.identity });
  const runner = o.runner ?? createCommandRunner();
  const ip = createIp(runner, o.netns);
  const nft = createNft(runner, o.netns);
  const options = defaultGatewayOptions;
  const events = createEventRecorder(client, "liqo-gateway", log);
  const teps = createInformer<TunnelEndpoint>({
    client,
    resource: TunnelEndpointResource,
    labelSelector: CLUSTER_ID_LABEL,
    logger: log,
  });
  const natMappings = createInformer<NatMapping>({
    client,
    resource: NatMappingResource,
    labelSelector: `${NAT_MAPPING_LABEL.key}=${NAT_MAPPING_LABEL.value}`,
    logger: log,
  });
  const nodes = createInformer({ client, resource: Resources.nodes, logger: log });
  const securityMode = o.securityMode ?? DEFAULT_SECURITY_MODE;
  // What the filter's sets come from, watched only in the segregation mode (FullPodToPod pays
  // nothing). The namespace mapping is read from our NamespaceMaps rather than the
  // NamespaceOffloadings: one small object per peer, labelled with its cluster ID, listing exactly
  // the local namespaces offloaded there, where a NamespaceOffloading is one per namespace whose
  // per-cluster status would have to be joined with the virtual nodes. Pods and EndpointSlices
  // are cut down to the fields the sets read.
  const segregation =
    securityMode === "IntraClusterTrafficSegregation"
      ? {
          pods: createInformer<KubeObject & FilterPod>({
            client,
            resource: Resources.pods,
            logger: log,
            transform: slimPod,
          }),
          namespaces: createInformer({
            client,
            resource: Resources.namespaces,
            labelSelector: REMOTE_CLUSTER_ID_LABEL,
            logger: log,
          }),
          namespaceMaps: createInformer<KubeObject & FilterNamespaceMap>({
            client,
            resource: NamespaceMapResource,
            labelSelector: `${REMOTE_CLUSTER_ID_LABEL},${REPLICATION_STATUS_LABEL}!=true`,
            logger: log,
          }),
          endpointSlices: createInformer<KubeObject & FilterEndpointSlice>({
            client,
            resource: Resources.endpointSlices,
            logger: log,
            transform: slimEndpointSlice,
          }),
        }
      : undefined;
  const informers = [teps, natMappings, nodes, ...Object.values(segregation ?? {})];
  let rejected = new Map<string, RejectCount>();
  let keys: { privateKey: string; publicKey: string } | undefined;
  let device: ActiveDevice | undefined;
  /** The open device's implementation is on the gateway Service (retried each pass until written). */
  let implementationShown = false;
  let active = false;
  let activeSince = 0;
  let exposure: Exposure | undefined;
  let plan: TunnelPlan | undefined;
  let live: WireguardStatus | undefined;
  let lastChanges: string[] = [];
  let lastError: string | undefined;
  let latencies = new Map<string, number | undefined>();
  /** Per peer: when the current run of pings through the tunnel without an answer began (ms). */
  let unanswered = new Map<string, number>();
  /** Peers that answered a ping since this replica became active. */
  const answered = new Set<string>();
  const configuredAt = new Map<string, number>();
  const reconciles = o.registry?.counter({
    name: "liqo_gateway_reconciles_total",
    help: "Gateway reconcile passes by outcome.",
    labelNames: ["outcome"] as const,
  });
  o.registry?.callbackCounter({
    name: "liqo_gateway_rejected_packets_total",
    help: "Packets from a peer's tunnel the IntraClusterTrafficSegregation filter rejected (nft counter), by peer; unknown: no peer's source.",
    labelNames: ["remote_cluster_id"] as const,
    collect: () => [...rejected].map(([id, c]) => ({ labels: { remote_cluster_id: id }, value: c.packets })),
  });
  const repairs = o.registry?.counter({
    name: "liqo_gateway_changes_total",
    help: "Changes applied to the data plane (configuration and drift repair).",
  });

  async function underlayMtu(): Promise<number> {
    if (!o.underlayDevice) return 1500;
    const [link] = await ip.json<{ mtu: number }>(["link", "show", "dev", o.underlayDevice]);
    if (!link)
      throw new Error(
        `underlay device ${o.underlayDevice} not found${o.netns ? ` in netns ${o.netns}` : ""}; check --underlay-device`,
      );
    return link.mtu;
  }

  async function publish() {
    // The Service exists for the peers (LoadBalancer, NodePort fallback); its annotation tells the
    // route agents where the active gateway's VTEP is.
    const found = await exposeGateway({
      client,
      namespace: o.liqoNamespace,
      port: o.listenPort,
      nodeName: o.nodeName,
      loadBalancerTimeoutMs: o.loadBalancerTimeoutMs,
      endpointOverride: o.endpoint,
    });
    exposure = found;
    await writeEndpoint(client, o.liqoNamespace, exposure.endpoint);
    if (o.overlay) {
      await client.mergePatch(Resources.services, GATEWAY_SERVICE_NAME, o.liqoNamespace, {
        metadata: { annotations: { [GATEWAY_VTEP_ANNOTATION]: o.overlay.vtepIp } },
      });
    }
  }

  /** Tells liqoctl status (through the gateway Service) which WireGuard the active device runs. */
  async function showImplementation(current: ActiveDevice) {
    if (implementationShown) return;
    const implementation = implementationOf(current.kind);
    try {
      await client.mergePatch(Resources.services, GATEWAY_SERVICE_NAME, o.liqoNamespace, {
        metadata: { annotations: { [WIREGUARD_IMPLEMENTATION_ANNOTATION]: implementation } },
      });
      implementationShown = true;
    } catch (err) {
      // The Service may not exist yet (publish() creates it in parallel): the next pass retries.
      log.warn("annotating the gateway Service with the WireGuard implementation failed; retried", {
        err: (err as Error).message,
        implementation,
      });
    }
  }

  async function writeStatuses(current: TunnelPlan, status: WireguardStatus) {
    const now = Date.now();
    for (const tep of teps.list()) {
      const key = objectKey(tep);
      let connection;
      const rejected = current.rejected.get(key);
      if (rejected) {
        connection = { status: "Error", statusMessage: rejected };
        events.warning(tep, "InvalidTunnelEndpoint", rejected);
      } else {
        const peer = current.config.peers.find((p) => p.clusterId === tep.spec.clusterID);
        if (!peer) continue;
        if (!configuredAt.has(peer.publicKey)) configuredAt.set(peer.publicKey, now);
        connection = connectionOf({
          peer,
          live: status.peers.find((p) => p.publicKey === peer.publicKey),
          configuredAtMs: Math.max(configuredAt.get(peer.publicKey)!, activeSince),
          nowMs: now,
          handshakeTimeoutMs: o.handshakeTimeoutMs ?? 60_000,
          latencyMs: latencies.get(peer.clusterId),
          unreachableSinceMs: unanswered.get(peer.clusterId),
        });
        if (connection.status === "Error") events.warning(tep, "TunnelDown", connection.statusMessage!);
      }
      const want = { tunnelIFaceName: o.device, gatewayIP: o.overlay?.vtepIp, connection };
      const have = tep.status;
      if (have?.tunnelIFaceName === want.tunnelIFaceName && sameConnection(have?.connection, connection)) continue;
      // A merge patch keeps map keys it does not name: the ones no longer reported are nulled.
      const gone = Object.keys(have?.connection?.peerConfiguration ?? {}).filter(
        (k) =>
          !("peerConfiguration" in connection && connection.peerConfiguration && k in connection.peerConfiguration),
      );
      const patch = gone.length
        ? {
            ...want,
            connection: {
              ...connection,
              peerConfiguration: {
                ...Object.fromEntries(gone.map((k) => [k, null])),
                ...("peerConfiguration" in connection ? connection.peerConfiguration : {}),
              },
            },
          }
        : want;
      await client.mergePatch(
        TunnelEndpointResource,
        tep.metadata.name!,
        tep.metadata.namespace,
        { status: patch },
        "status",
      );
      log.info("tunnel status", { tunnelEndpoint: key, status: connection.status, message: connection.statusMessage });
    }
  }

  const loop = createLoop({
    name: "gateway",
    intervalMs: o.intervalMs ?? 5_000,
    logger: log,
    async pass() {
      if (!active || !keys) return;
      if (!device) {
        // Opened here rather than in onStartedLeading, so a failure (the old holder's port not yet
        // released) is retried by the loop with backoff.
        device = await openDevice({ name: o.device, netns: o.netns, mode: o.wireguard ?? "auto", ip, runner });
        activeSince = Date.now();
        configuredAt.clear();
        answered.clear();
        unanswered = new Map();
        implementationShown = false;
        log.info("active: device opened", {
          device: o.device,
          kind: device.kind,
          implementation: implementationOf(device.kind),
          pid: device.pid,
        });
      }
      await showImplementation(device);
      const current = planTunnels(teps.list(), natMappings.list(), {
        device: o.device,
        privateKey: keys.privateKey,
        listenPort: o.listenPort,
        mtu: o.mtu,
        underlay: { mtu: await underlayMtu(), ipv6: false },
        persistentKeepalive: o.persistentKeepalive,
      });
      plan = current;
      const reconciler = createGatewayReconciler({ ip, nft, wireguard: device.client, runner }, options);
      let security: SecuritySpec = { mode: securityMode };
      if (segregation)
        security = {
          mode: securityMode,
          sets: peerFilterSets({
            peers: current.config.peers.map((p) => p.clusterId),
            nodes: nodes.list(),
            pods: segregation.pods.list(),
            namespaces: segregation.namespaces.list(),
            namespaceMaps: segregation.namespaceMaps.list(),
            endpointSlices: segregation.endpointSlices.list(),
          }),
        };
      const report = await reconciler.reconcile(current.config, security);
      rejected = report.rejected;
      const changes = [...report.changes];
      if (o.overlay) {
        const vteps = nodes.list().flatMap((n: KubeObject & { spec?: { podCIDR?: string } }) => {
          const vtep = n.metadata.annotations?.[NODE_VTEP_ANNOTATION];
          return vtep ? [{ vtepIp: vtep, podCidr: n.spec?.podCIDR }] : [];
        });
        changes.push(...(await reconcileVxlan(ip, gatewayVxlan(o.overlay, vteps))));
      }
      // Our end of the latency probe, then one echo per peer through the tunnel (in parallel).
      changes.push(
        ...(await ensureDeviceAddress(ip, o.device, firstHost(current.config.localExternalCidr)).catch(() => [])),
      );
      const rtts = await Promise.all(
        current.config.peers.map((p) => probeLatency(runner, o.netns, firstHost(p.remoteNatExternalCidr))),
      );
      latencies = new Map(current.config.peers.map((p, i) => [p.clusterId, rtts[i]]));
      // When each peer's current run of unanswered pings began: what service continuity acts on.
      // Only for a peer that answered since this replica became active: a tunnel still coming up
      // (or a peer whose gateway does not answer pings at all) is not an outage of a working link.
      const at = Date.now();
      current.config.peers.forEach((p, i) => {
        if (rtts[i] !== undefined) answered.add(p.clusterId);
      });
      unanswered = new Map(
        current.config.peers.flatMap((p, i) =>
          rtts[i] === undefined && answered.has(p.clusterId)
            ? [[p.clusterId, unanswered.get(p.clusterId) ?? at] as const]
            : [],
        ),
      );
      live = await device.client.get();
      await writeStatuses(current, live);
      reconciles?.inc({ outcome: "ok" });
      if (changes.length > 0) {
        repairs?.inc(changes.length);
        lastChanges = changes;
        log.info("data plane reconciled", { changes });
      }
      lastError = undefined;
    },
    onError(err) {
      lastError = err.message;
      reconciles?.inc({ outcome: "error" });
    },
  });

  /** The gateway Service selects the pod labelled active; best effort, retried by the next leadership change. */
  function labelPod(role: "active" | "standby"): Promise<void> {
    if (!o.podName) return Promise.resolve();
    return client
      .mergePatch(Resources.pods, o.podName, o.liqoNamespace, { metadata: { labels: { [GATEWAY_ROLE_LABEL]: role } } })
      .then(
        () => undefined,
        (err) => {
          lastError = `labelling pod ${o.podName} ${role}: ${(err as Error).message}`;
          log.error("labelling the gateway pod failed", { err, role });
        },
      );
  }

  const elector = createLeaderElector({
    client,
    namespace: o.liqoNamespace,
    name: o.lease?.name ?? "liqo-gateway",
    identity: o.identity,
    leaseDurationMs: o.lease?.durationMs,
    renewDeadlineMs: o.lease?.renewDeadlineMs,
    retryPeriodMs: o.lease?.retryPeriodMs,
    standbyWaitMs: o.lease?.standbyWaitMs,
    logger: log,
    // In a pod, a standby asks the holder's pod: a holder whose container died (SIGKILL, OOM, a
    // crash) is replaced at once, not after the lease duration, which cost ~30 s of traffic when a
    // gateway crashed twice in a row (docs/reliability.md). Identities are `<pod>-<pid>` there.
    holderGone: o.podName
      ? async (holder) => {
          const pod = podOfIdentity(holder);
          if (!pod || pod === o.podName) return false;
          return holderPodDead(await client.find(Resources.pods, pod, o.liqoNamespace));
        }
      : undefined,
    async onStartedLeading() {
      active = true;
      loop.kick();
      labelPod("active");
      publish().catch((err) => {
        lastError = `publishing the endpoint: ${(err as Error).message}`;
        log.error("publishing the endpoint failed", { err });
      });
    },
    async onStoppedLeading() {
      active = false;
      await loop.runNow().catch(() => undefined); // lets a running pass finish; it sees active=false
      const done = await teardown({ ip, nft, device, vxlan: o.overlay ? VXLAN_NAME : undefined }, options).catch(
        (err) => [`teardown failed: ${(err as Error).message}`],
      );
      // The filter goes too: a standby forwards nothing, and the next holder applies its own mode.
      if (await nft.listTable("ip", options.filterTable).catch(() => undefined)) {
        await nft
          .apply(deleteFilterTableScript(options.filterTable))
          .then(() => done.push(`nft table ${options.filterTable} deleted`))
          .catch((err) => done.push(`deleting nft table ${options.filterTable} failed: ${(err as Error).message}`));
      }
      device = undefined;
      live = undefined;
      rejected = new Map();
      labelPod("standby");
      log.warn("standby: configuration torn down", { done });
    },
  });
  if (o.registry)
    registerPeerMetrics(o.registry, {
      peers: () => (device ? (plan?.config.peers ?? []) : []),
      live: () => live,
      latencyMs: (clusterId) => latencies.get(clusterId),
    });
  if (o.registry) registerImplementationMetric(o.registry, () => (device ? implementationOf(device.kind) : undefined));
  o.registry?.callbackGauge({
    name: "liqo_gateway_leader",
    help: "1 when this replica is the active gateway.",
    collect: () => (active ? 1 : 0),
  });
  for (const i of [teps, natMappings, nodes]) i.on({ add: loop.kick, update: loop.kick, delete: loop.kick });
  // Pods change status often: only a change the sets read (address, phase, node, label) is worth a
  // pass; the slimmed objects differ in nothing else but their resourceVersion.
  const relevant = (a: KubeObject, b: KubeObject) =>
    JSON.stringify({ ...a, metadata: { ...a.metadata, resourceVersion: undefined } }) !==
    JSON.stringify({ ...b, metadata: { ...b.metadata, resourceVersion: undefined } });
  for (const i of Object.values(segregation ?? {}))
    i.on({ add: loop.kick, update: (a, b) => relevant(a, b) && loop.kick(), delete: loop.kick });

  function tunnels(): TunnelView[] {
    return teps.list().map((tep) => {
      const key = objectKey(tep);
      const peer = plan?.config.peers.find((p) => p.clusterId === tep.spec.clusterID);
      const wg = peer && live?.peers.find((p) => p.publicKey === peer.publicKey);
      return {
        tunnelEndpoint: key,
        clusterId: tep.spec.clusterID,
        endpoint: peer?.endpoint,
        status: tep.status?.connection?.status ?? "Unknown",
        message: plan?.rejected.get(key) ?? tep.status?.connection?.statusMessage ?? "",
        lastHandshake: wg?.lastHandshakeSec ? new Date(wg.lastHandshakeSec * 1000).toISOString() : undefined,
        rxBytes: wg?.rxBytes,
        txBytes: wg?.txBytes,
        latencyMs: latencies.get(tep.spec.clusterID),
      };
    });
  }

  return {
    async start() {
      // An API server that is (re)starting answers 429/5xx or not at all for a moment.
      for (let delay = 200; ; delay = Math.min(delay * 2, 5_000)) {
        try {
          keys = await ensureKeys(client, o.liqoNamespace);
          break;
        } catch (err) {
          const transient =
            err instanceof KubeApiError && (err.status === 0 || err.status === 429 || err.status >= 500);
          if (!transient || delay >= 5_000) throw err;
          log.warn("reading the key Secret failed; retrying", { err: (err as Error).message, retryInMs: delay });
          await Bun.sleep(delay);
        }
      }
      for (const i of informers) i.start();
      await Promise.all(informers.map((i) => i.waitForSync(120_000)));
      loop.start();
      // A container restarted in a pod its previous process labelled active (killed before it could
      // step down) is a standby until it leads again: otherwise, once a standby has taken the Lease
      // over, the Service and the route agents would find two active pods. Done before the election
      // starts, so it cannot land after the label of a leadership won at once.
      await labelPod("standby");
      elector.start();
      log.info("gateway started", { publicKey: keys.publicKey, device: o.device, netns: o.netns });
    },
    async stop() {
      await elector.stop();
      await loop.stop();
      await Promise.all(informers.map((i) => i.stop()));
    },
    synced: () => informers.every((i) => i.synced),
    isActive: () => active,
    tunnels,
    leader: () => ({
      ...elector.status(),
      active,
      device: o.device,
      deviceKind: device?.kind,
      wireguardImplementation: device ? implementationOf(device.kind) : undefined,
      devicePid: device?.pid,
      netns: o.netns,
      publicKey: keys?.publicKey,
      exposure,
      mtu: plan ? tunnelMtu(plan.config) : undefined,
      lastChanges,
      lastError,
      securityMode,
    }),
    reconcileNow: () => loop.runNow(),
  };
}
export type GatewayController = ReturnType<typeof createGatewayController>;
