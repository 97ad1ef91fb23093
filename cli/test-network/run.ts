// `liqoctl test network` for one peering: an offloaded namespace of its own, a server pod on each
// side (`liqo test-server` from the liqo image: a page on port 80, and 1 MiB over TCP on port 9000), then probe pods (a local pod, a local node's
// network, a remote pod) that run every check and report in their termination messages. The
// namespace goes at the end, whatever happened (a deadline, a failure, Ctrl-C).
import {
  NamespaceOffloadingResource,
  REMOTE_CLUSTER_ID_LABEL,
  TYPE_LABEL,
  VIRTUAL_NODE_TOLERATION,
  VIRTUAL_NODE_TYPE,
} from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";
import { formatIpv4, parseCidr, parseIpv4, remapIp } from "../../netfabric/ipam/ipv4.ts";
import {
  BULK_BYTES,
  BULK_PORT,
  type Check,
  type CheckId,
  type CheckResult,
  parseProbeReport,
  probeScript,
} from "../../netfabric/selftest/probes.ts";
import type { Peer } from "./preflight.ts";
import type { SecurityMode } from "../deployment-args.ts";

export const TEST_LABEL = "liqo.io/network-test";
/** When a leftover namespace (a run killed with SIGKILL) may be removed by a later run. */
export const EXPIRES_ANNOTATION = "liqo.io/network-test-expires";

type Offloading = KubeObject & { status?: { offloadingPhase?: string; remoteNamespaceName?: string } };

export class Interrupted extends Error {
  override name = "Interrupted";
}

export interface RunOptions {
  client: KubeClient;
  peer: Peer;
  image: string;
  /** Only the pod ↔ pod checks. */
  basic: boolean;
  deadline: number;
  /** Seconds each probe retries a failing check. */
  probeBudget: number;
  signal: AbortSignal;
  say: (message: string) => void;
  /**
   * With the peer's kubeconfig (--remote-kubeconfig): a namespace of its own there, not offloaded,
   * whose pods check what each side's security mode lets through and what it must refuse.
   */
  remote?: { client: KubeClient; namespace: string; image: string; localMode: SecurityMode; peerMode: SecurityMode };
}

export interface RunOutcome {
  namespace: string;
  results: CheckResult[];
  /** Checks that never reported, with why. */
  missing: { id: CheckId; why: string }[];
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw new Interrupted("interrupted");
  await Promise.race([Bun.sleep(ms), new Promise((r) => signal.addEventListener("abort", r, { once: true }))]);
  if (signal.aborted) throw new Interrupted("interrupted");
}

/** Polls until `check` answers, the deadline passes (an Error naming `what` and the last state) or the signal fires. */
async function until<T>(
  what: string,
  o: RunOptions,
  check: () => Promise<T | undefined>,
  state: () => Promise<string>,
): Promise<T> {
  while (true) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > o.deadline) throw new Error(`timed out waiting for ${what}: ${await state()}`);
    await pause(1000, o.signal);
  }
}

const onLocalNode = {
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: TYPE_LABEL, operator: "NotIn", values: [VIRTUAL_NODE_TYPE] }] },
        ],
      },
    },
  },
};
const onPeer = (peer: Peer) => ({
  nodeSelector: { [REMOTE_CLUSTER_ID_LABEL]: peer.clusterId },
  tolerations: [VIRTUAL_NODE_TOLERATION],
});

function pod(
  ns: string,
  name: string,
  image: string,
  placement: Record<string, unknown>,
  container: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels: { [TEST_LABEL]: "true", "liqo.io/network-test-role": name } },
    spec: {
      ...placement,
      ...extra,
      restartPolicy: name.startsWith("probe") ? "Never" : "Always",
      terminationGracePeriodSeconds: 0,
      enableServiceLinks: false,
      // Root in the container: the page listens on port 80 and ping sends raw ICMP (the liqo
      // image's own user is 1000). Nothing more than Pod Security's baseline level allows.
      containers: [
        { name: "c", image, imagePullPolicy: "IfNotPresent", securityContext: { runAsUser: 0 }, ...container },
      ],
    },
  };
}

/** The liqo image's test server: a page naming the pod on port 80, BULK_BYTES over TCP to each connection. */
function server(ns: string, name: string, image: string, placement: Record<string, unknown>): Pod {
  return pod(ns, name, image, placement, {
    args: ["test-server", "--http-port=80", `--bulk-port=${BULK_PORT}`, `--bulk-bytes=${BULK_BYTES}`],
    readinessProbe: { httpGet: { path: "/", port: 80 }, periodSeconds: 1 },
  });
}

function service(ns: string, name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns, labels: { [TEST_LABEL]: "true" } },
    spec: { selector: { "liqo.io/network-test-role": name }, ports: [{ name: "http", port: 80, targetPort: 80 }] },
  } as KubeObject;
}

/** Our pod's address as the peer reaches it (through its remapping of our pod CIDR, if any). */
export function addressSeenByPeer(ip: string, localPodCidr: string, localNatPodCidr: string): string {
  if (!localNatPodCidr || localNatPodCidr === "None") return ip;
  return formatIpv4(remapIp(parseIpv4(ip), parseCidr(localPodCidr), parseCidr(localNatPodCidr)));
}

function podState(p: Pod | undefined): string {
  if (!p) return "not created";
  const cs = p.status?.containerStatuses?.[0]?.state;
  const why = cs?.waiting
    ? `${cs.waiting.reason}${cs.waiting.message ? `: ${cs.waiting.message}` : ""}`
    : cs?.terminated
      ? `terminated ${cs.terminated.reason ?? ""} (exit ${cs.terminated.exitCode})`
      : "";
  return `${p.metadata.name} ${p.status?.phase ?? "Pending"}${why ? ` (${why})` : ""}${p.status?.message ? `: ${p.status.message}` : ""}`;
}

export function namespaceFor(now = Date.now()): string {
  return `liqo-netcheck-${(now % 1e8).toString(36)}${Math.floor(Math.random() * 1296)
    .toString(36)
    .padStart(2, "0")}`;
}

/** Creates the namespace; from here on the caller must call cleanup(ns). */
export async function createNamespace(client: KubeClient, ns: string, deadline: number): Promise<void> {
  await client.create(Resources.namespaces, {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: ns,
      // The node probe shares its node's network (hostNetwork), which Pod Security's baseline
      // level, the default of many clusters, refuses: this namespace lives for one run and holds
      // only the test's own pods.
      labels: { [TEST_LABEL]: "true", "pod-security.kubernetes.io/enforce": "privileged" },
      annotations: { [EXPIRES_ANNOTATION]: new Date(deadline + 300_000).toISOString() },
    },
  } as KubeObject);
}

/** A probe pod: where it runs and the checks it reports on. */
interface Probe {
  name: string;
  placement: Record<string, unknown>;
  extra?: Record<string, unknown>;
  checks: Check[];
  /** Runs in the peer's own namespace (with --remote-kubeconfig). */
  remote?: boolean;
}

/** The server pods' addresses as each side's probes reach them. */
interface Servers {
  /** The remote server's address, as seen here. */
  remoteIp: string;
  /** The local server's address, as the peer sees it. */
  localSeen: string;
  /** With the peer's kubeconfig: its own server's address as seen here, and our server behind no Service as the peer sees it. */
  peerSeen?: string;
  privateSeen?: string;
}

/** Runs the checks in the namespace: offloads it, starts the servers, then the probes, and collects their reports. */
export async function runChecks(o: RunOptions, ns: string): Promise<RunOutcome> {
  await offloadNamespace(o, ns);
  // Pods are created once the offloading is Ready: until it has a phase, liqo's webhook refuses
  // pods in the namespace, and before it is labelled it would not place them.
  const twin = await waitForTwinNamespace(o, ns);
  await startServers(o, ns);
  const servers = await waitForServers(o, ns);
  const probes = [...probesFor(o, ns, twin, servers), ...peerProbes(o, twin, servers)];
  await startProbes(o, ns, probes, servers);
  return { namespace: ns, ...(await collectReports(o, ns, probes)) };
}

/** Offloads the namespace to the peer alone, its pods allowed on both sides. */
async function offloadNamespace({ client, peer }: RunOptions, ns: string) {
  await client.create(NamespaceOffloadingResource, {
    apiVersion: "offloading.liqo.io/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace: ns },
    spec: {
      namespaceMappingStrategy: "DefaultName",
      podOffloadingStrategy: "LocalAndRemote",
      clusterSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: REMOTE_CLUSTER_ID_LABEL, operator: "In", values: [peer.clusterId] }] },
        ],
      },
    },
  } as KubeObject);
}

/** Creates a server pod and its Service on each side. */
async function startServers(o: RunOptions, ns: string) {
  const { client, peer, image } = o;
  o.say(`namespace ${ns} offloaded to ${peer.name}; starting a server pod on each side`);
  await client.create(Resources.pods, server(ns, "server-local", image, onLocalNode));
  await client.create(Resources.pods, server(ns, "server-remote", image, onPeer(peer)));
  await client.create(Resources.services, service(ns, "server-local"));
  await client.create(Resources.services, service(ns, "server-remote"));
  if (!o.remote) return;
  // A local server no Service selects, and a server of the peer's own in a namespace liqo does not manage.
  await client.create(Resources.pods, server(ns, "server-private", image, onLocalNode));
  await o.remote.client.create(Resources.pods, server(o.remote.namespace, "server-peer", o.remote.image, {}));
}

/** Waits for the offloading to be Ready; answers the name of the twin namespace in the peer. */
function waitForTwinNamespace(o: RunOptions, ns: string): Promise<string> {
  const { client } = o;
  return until(
    `the offloading of ${ns}`,
    o,
    async () => {
      const off = await client.find<Offloading>(NamespaceOffloadingResource, "offloading", ns);
      return off?.status?.offloadingPhase === "Ready" && off.status.remoteNamespaceName
        ? off.status.remoteNamespaceName
        : undefined;
    },
    async () =>
      `phase ${(await client.find<Offloading>(NamespaceOffloadingResource, "offloading", ns))?.status?.offloadingPhase ?? "none"}`,
  );
}

const ready = (p?: Pod) =>
  p?.status?.podIP && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? p : undefined;

/** Waits for both server pods to be Ready; answers their addresses as the other side reaches them. */
async function waitForServers(o: RunOptions, ns: string): Promise<Servers> {
  const { client } = o;
  const [local, remote] = await Promise.all(
    ["server-local", "server-remote"].map((name) =>
      until(
        `${name} Ready`,
        o,
        async () => ready(await client.find<Pod>(Resources.pods, name, ns)),
        async () => podState(await client.find<Pod>(Resources.pods, name, ns)),
      ),
    ),
  );
  const remoteIp = remote!.status!.podIP!;
  const spec = o.peer.tunnel.spec;
  const localSeen = addressSeenByPeer(local!.status!.podIP!, spec.localPodCIDR, spec.localNATPodCIDR);
  if (!o.remote) return { remoteIp, localSeen };
  const r = o.remote;
  const [priv, own] = await Promise.all([
    until(
      "server-private Ready",
      o,
      async () => ready(await client.find<Pod>(Resources.pods, "server-private", ns)),
      async () => podState(await client.find<Pod>(Resources.pods, "server-private", ns)),
    ),
    until(
      `server-peer Ready in ${o.peer.name}`,
      o,
      async () => ready(await r.client.find<Pod>(Resources.pods, "server-peer", r.namespace)),
      async () => podState(await r.client.find<Pod>(Resources.pods, "server-peer", r.namespace)),
    ),
  ]);
  return {
    remoteIp,
    localSeen,
    privateSeen: addressSeenByPeer(priv.status!.podIP!, spec.localPodCIDR, spec.localNATPodCIDR),
    // The peer's pod CIDR as it is remapped here, if it is.
    peerSeen: addressSeenByPeer(own.status!.podIP!, spec.remotePodCIDR, spec.remoteNATPodCIDR),
  };
}

/**
 * With the peer's kubeconfig: what the security modes allow and refuse. Our pod → the peer's own
 * pod depends on the peer's mode; the peer's own pod → our pod behind no Service on ours; the
 * peer's own pod → a Service we reflect is allowed by both modes.
 */
export function peerProbes(o: Pick<RunOptions, "remote" | "basic">, twin: string, s: Servers): Probe[] {
  if (!o.remote || o.basic || !s.peerSeen || !s.privateSeen) return [];
  const expect = (mode: SecurityMode) => (mode === "IntraClusterTrafficSegregation" ? "refused" : "http");
  return [
    {
      name: "probe-peer",
      placement: {},
      remote: true,
      checks: [
        { id: "peer-pod-to-pod", kind: expect(o.remote.localMode), target: s.privateSeen, server: "server-private" },
        {
          id: "peer-pod-to-reflected-service",
          kind: "http",
          target: `server-local.${twin}.svc.cluster.local`,
          server: "server-local",
        },
      ],
    },
    {
      name: "probe-local-to-peer",
      placement: onLocalNode,
      checks: [{ id: "pod-to-peer-pod", kind: expect(o.remote.peerMode), target: s.peerSeen, server: "server-peer" }],
    },
  ];
}

/** The probe pods to run: a local pod, a remote pod and (unless basic) a local node's network, with their checks. */
function probesFor(o: RunOptions, ns: string, twin: string, { remoteIp, localSeen }: Servers): Probe[] {
  return [
    {
      name: "probe-local",
      placement: onLocalNode,
      checks: [
        { id: "pod-to-remote-pod", kind: "http", target: remoteIp, server: "server-remote" },
        ...(o.basic
          ? []
          : ([
              {
                id: "pod-to-service",
                kind: "http",
                target: `server-remote.${ns}.svc.cluster.local`,
                server: "server-remote",
              },
              { id: "path-mtu", kind: "mtu", target: remoteIp },
              { id: "tcp-bulk", kind: "bulk", target: remoteIp, port: BULK_PORT, bytes: BULK_BYTES },
            ] as Check[])),
      ],
    },
    {
      name: "probe-remote",
      placement: onPeer(o.peer),
      checks: [
        { id: "remote-pod-to-pod", kind: "http", target: localSeen, server: "server-local" },
        ...(o.basic
          ? []
          : ([
              {
                id: "remote-pod-to-reflected-service",
                kind: "http",
                target: `server-local.${twin}.svc.cluster.local`,
                server: "server-local",
              },
              { id: "remote-path-mtu", kind: "mtu", target: localSeen },
              { id: "remote-tcp-bulk", kind: "bulk", target: localSeen, port: BULK_PORT, bytes: BULK_BYTES },
            ] as Check[])),
      ],
    },
    ...(o.basic
      ? []
      : [
          {
            name: "probe-node",
            placement: onLocalNode,
            extra: { hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" },
            checks: [{ id: "node-to-remote-pod", kind: "http", target: remoteIp, server: "server-remote" } as Check],
          },
        ]),
  ];
}

/** Creates the probe pods, each running its checks. */
async function startProbes(o: RunOptions, ns: string, probes: Probe[], { remoteIp, localSeen }: Servers) {
  o.say(
    `servers Ready (remote at ${remoteIp} as seen here, local at ${localSeen} as ${o.peer.name} sees it); running the probes`,
  );
  for (const p of probes) {
    const [client, where] = p.remote && o.remote ? [o.remote.client, o.remote.namespace] : [o.client, ns];
    await client.create(
      Resources.pods,
      pod(
        where,
        p.name,
        p.remote && o.remote ? o.remote.image : o.image,
        p.placement,
        { command: ["sh", "-c", probeScript(p.checks, o.probeBudget)] },
        p.extra,
      ),
    );
  }
}

/** Waits for each probe to finish and reads its report; the checks it did not report are missing, with why. */
async function collectReports(o: RunOptions, ns: string, probes: Probe[]): Promise<Omit<RunOutcome, "namespace">> {
  const results: CheckResult[] = [];
  const missing: RunOutcome["missing"] = [];
  const done = (p?: Pod) =>
    p?.status?.containerStatuses?.[0]?.state?.terminated ||
    p?.status?.phase === "Succeeded" ||
    p?.status?.phase === "Failed";
  for (const p of probes) {
    let last: Pod | undefined;
    const [client, where] = p.remote && o.remote ? [o.remote.client, o.remote.namespace] : [o.client, ns];
    try {
      last = await until(
        `${p.name} to finish`,
        o,
        async () => {
          last = await client.find<Pod>(Resources.pods, p.name, where);
          return done(last) ? last : undefined;
        },
        async () => podState(last),
      );
    } catch (err) {
      if (err instanceof Interrupted) throw err;
      for (const c of p.checks)
        missing.push({ id: c.id, why: `${p.name} did not finish before the deadline: ${podState(last)}` });
      continue;
    }
    const got = parseProbeReport(last.status?.containerStatuses?.[0]?.state?.terminated?.message ?? "");
    results.push(...got);
    for (const c of p.checks)
      if (!got.some((r) => r.id === c.id))
        missing.push({ id: c.id, why: `${p.name} reported nothing for it: ${podState(last)}` });
  }
  return { results, missing };
}

/** Deletes the test namespace and waits (until `deadline`) for it to be gone; the offloading goes with it. */
export async function cleanup(client: KubeClient, ns: string, deadline: number): Promise<boolean> {
  await client.delete(Resources.namespaces, ns).catch(() => false);
  while (Date.now() < deadline) {
    if (!(await client.find(Resources.namespaces, ns).catch(() => ({})))) return true;
    await Bun.sleep(1000);
  }
  return false;
}

/** Namespaces of earlier runs past their expiry (runs killed before they could clean up). */
export async function sweepExpired(client: KubeClient, now = Date.now()): Promise<string[]> {
  const list = (await client.list(Resources.namespaces, { labelSelector: `${TEST_LABEL}=true` })).items;
  const expired = list.filter((n) => {
    const at = Date.parse(n.metadata.annotations?.[EXPIRES_ANNOTATION] ?? "");
    return Number.isFinite(at) && at < now && !n.metadata.deletionTimestamp;
  });
  for (const n of expired) await client.delete(Resources.namespaces, n.metadata.name!);
  return expired.map((n) => n.metadata.name!);
}
