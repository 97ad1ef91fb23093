// What `liqoctl test network` checks before it starts any pod: the peering has networking, its
// tunnel is Connected, a gateway is active here, every node runs its route agent, and the virtual
// node is Ready. When one of these fails the fabric is down and the test says so at once.
import { ForeignClusterResource, REMOTE_CLUSTER_ID_LABEL } from "../../core/apis/index.ts";
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { GATEWAY_ROLE_LABEL } from "../../netfabric/gateway/exposure.ts";
import { CliError, ExitCode } from "../errors.ts";

type Ready = KubeObject & {
  status?: { conditions?: { type: string; status: string; message?: string }[]; phase?: string };
};
type DaemonSet = KubeObject & { status?: { desiredNumberScheduled?: number; numberReady?: number } };

export interface Peer {
  name: string;
  clusterId: string;
  tunnel: TunnelEndpoint & KubeObject;
  virtualNode: string;
}

export interface PreflightRow {
  check: string;
  ok: boolean;
  detail: string;
}

const daemonSets: ResourceRef = {
  group: "apps",
  version: "v1",
  kind: "DaemonSet",
  plural: "daemonsets",
  namespaced: true,
};

const isReady = (o: Ready) => !!o.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");

/** The peerings to test: the one named, or every one with networking and an outgoing peering. */
export async function choosePeers(client: KubeClient, name?: string): Promise<ForeignClusterObject[]> {
  const fcs = (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
  const outgoing = (fc: ForeignClusterObject) =>
    fc.status?.peeringConditions?.find((c) => c.type === "OutgoingPeering")?.status === "Established";
  if (name) {
    const fc = fcs.find((f) => f.metadata.name === name || f.spec.clusterIdentity?.clusterName === name);
    if (!fc)
      throw new CliError(
        `no peering named ${name} (liqoctl status lists them: ${fcs.map((f) => f.metadata.name).join(", ") || "none"})`,
        ExitCode.Failure,
      );
    if (fc.spec.networkingEnabled === "No")
      throw new CliError(
        `peering ${name} has networking disabled (peered with --no-networking): there is no fabric to test; peer again with networking`,
        ExitCode.Failure,
      );
    if (!outgoing(fc))
      throw new CliError(
        `peering ${name} has no outgoing peering Established, so no virtual node to run the remote probes on; run liqoctl test network on the consumer`,
        ExitCode.Failure,
      );
    return [fc];
  }
  const chosen = fcs.filter((f) => f.spec.networkingEnabled !== "No" && outgoing(f));
  if (!chosen.length) {
    throw new CliError(
      `no peering with networking and an outgoing peering Established here (liqoctl status lists ${fcs.length ? fcs.map((f) => f.metadata.name).join(", ") : "none"}); run liqoctl test network on the consumer`,
      ExitCode.Failure,
    );
  }
  return chosen;
}

/** Preflight rows for one peering; `peer` is set when the data checks can run. */
export async function preflight(
  client: KubeClient,
  fc: ForeignClusterObject,
  liqoNamespace: string,
): Promise<{ rows: PreflightRow[]; peer?: Peer }> {
  const name = fc.metadata.name!;
  const clusterId = fc.spec.clusterIdentity?.clusterID ?? "";
  const rows: PreflightRow[] = [];
  const net = fc.status?.peeringConditions?.find((c) => c.type === "NetworkStatus");
  rows.push({
    check: "networking of the peering",
    ok: net?.status === "Established",
    detail: net
      ? `NetworkStatus ${net.status}${net.message ? `: ${net.message}` : ""}`
      : "no NetworkStatus condition yet (is liqo-network-manager running?)",
  });

  const teps = (await client.list<TunnelEndpoint & KubeObject>(TunnelEndpointResource)).items.filter(
    (t) => t.spec.clusterID === clusterId,
  );
  const tunnel = teps[0];
  const conn = (tunnel as { status?: { connection?: { status?: string; statusMessage?: string } } } | undefined)?.status
    ?.connection;
  rows.push({
    check: "WireGuard tunnel",
    ok: conn?.status === "Connected",
    detail: !tunnel
      ? `no TunnelEndpoint for cluster ${clusterId} (the network managers have not exchanged NetworkConfigs)`
      : `TunnelEndpoint ${tunnel.metadata.namespace}/${tunnel.metadata.name} ${conn?.status ?? "without status (is liqo-gateway running?)"}${conn?.statusMessage ? `: ${conn.statusMessage}` : ""}`,
  });

  const gateways = (
    await client.list<Ready>(Resources.pods, {
      namespace: liqoNamespace,
      labelSelector: "app.kubernetes.io/name=liqo-gateway",
    })
  ).items;
  const active = gateways.filter((p) => p.metadata.labels?.[GATEWAY_ROLE_LABEL] === "active" && isReady(p));
  rows.push({
    check: "active gateway here",
    ok: active.length === 1,
    detail:
      active.length === 1
        ? `pod ${active[0]!.metadata.name} on ${(active[0] as { spec?: { nodeName?: string } }).spec?.nodeName ?? "?"}`
        : active.length > 1
          ? `${active.length} pods claim to be active: ${active.map((p) => p.metadata.name).join(", ")}`
          : `no Ready gateway pod labelled ${GATEWAY_ROLE_LABEL}=active in ${liqoNamespace} (${gateways.length} gateway pods: ${gateways.map((p) => `${p.metadata.name} ${p.status?.phase}`).join(", ") || "none"}; kubectl -n ${liqoNamespace} get deploy liqo-gateway)`,
  });

  const ds = await client.find<DaemonSet>(daemonSets, "liqo-route", liqoNamespace);
  const want = ds?.status?.desiredNumberScheduled ?? 0;
  const ready = ds?.status?.numberReady ?? 0;
  rows.push({
    check: "route agents here",
    ok: !!ds && want > 0 && ready === want,
    detail: ds
      ? `${ready}/${want} liqo-route pods Ready${ready < want ? ` (nodes without one cannot reach the peer: kubectl -n ${liqoNamespace} get pods -l app.kubernetes.io/name=liqo-route -o wide)` : ""}`
      : `no DaemonSet ${liqoNamespace}/liqo-route`,
  });

  const nodes = (
    await client.list<Ready>(Resources.nodes, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${clusterId}` })
  ).items;
  const vn = nodes.find(isReady);
  rows.push({
    check: "virtual node",
    ok: !!vn,
    detail: vn
      ? `${vn.metadata.name} Ready`
      : nodes.length
        ? `${nodes.map((n) => n.metadata.name).join(", ")} not Ready`
        : `no virtual node for cluster ${clusterId}`,
  });

  const ok = rows.every((r) => r.ok);
  return { rows, peer: ok ? { name, clusterId, tunnel: tunnel!, virtualNode: vn!.metadata.name! } : undefined };
}
