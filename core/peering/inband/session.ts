// The steps of an in-band peering between two clusters liqoctl can reach at once (Liqo v0.5's
// `liqoctl peer in-band`): each step reads what exists and only adds what is missing, so running
// it twice is harmless. The network comes first (tenant namespaces, ForeignClusters with
// networking so both network managers take the peer, NetworkConfigs exchanged here, TunnelEndpoints
// connected); then each direction's ForeignCluster gets the peer's auth URL and API proxy at their
// addresses inside the tunnel, and the peer's token, and the usual peering runs through the tunnel.
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  DISCOVERY_TYPE_LABEL,
  DiscoveryType,
  TENANT_NAMESPACE_LABEL,
} from "../../apis/labels.ts";
import { ForeignClusterResource, TunnelEndpointResource, type TunnelEndpoint } from "../../apis/index.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { tenantNamespaceName } from "../../offloading/names.ts";
import { readAuthToken } from "../auth/index.ts";
import { IN_BAND_PENDING_AUTH_URL, readAuthUrl, WAITING_FOR_TUNNEL } from "../auth-url.ts";
import { remoteTokenSecret, type ForeignClusterObject } from "../foreigncluster/index.ts";
import { ensureNamespace, readClusterIdentity, type LocalClusterIdentity } from "../identity.ts";
import { CLUSTER_ID_LABEL, KEYS_LABEL } from "../../../netfabric/shared/labels.ts";
import {
  addressSeenLocally,
  InBandError,
  readInBandEndpoints,
  translationSources,
} from "../../../netfabric/inband/endpoints.ts";
import { exchangeNetworkConfigs, type ExchangeEnd } from "./exchange.ts";

export { InBandError };

export interface InBandSide {
  /** How the user named it: "--context rome" or "--remote-context milan". */
  label: string;
  client: KubeClient;
  namespace: string;
  identity: LocalClusterIdentity;
}

const FIELD_MANAGER = "liqoctl-in-band";
// The placeholder auth URL of an in-band ForeignCluster until the tunnel is up: see auth-url.ts.
export { IN_BAND_PENDING_AUTH_URL, WAITING_FOR_TUNNEL };
const NOT_YET = IN_BAND_PENDING_AUTH_URL;

/** Reads the cluster's identity; an unreachable cluster or one without liqo is an InBandError naming the flag. */
export async function openSide(label: string, client: KubeClient, namespace: string): Promise<InBandSide> {
  let identity: LocalClusterIdentity | undefined;
  try {
    identity = await readClusterIdentity(client, namespace);
  } catch (err) {
    const reason =
      err instanceof KubeApiError && err.status === 0 ? `cannot reach ${client.server}` : (err as Error).message;
    throw new InBandError(`the cluster of ${label} is unreachable: ${reason}; check the kubeconfig and context`);
  }
  if (!identity)
    throw new InBandError(
      `the cluster of ${label} has no liqo cluster identity in namespace ${namespace}: install liqo there first`,
    );
  return { label, client, namespace, identity };
}

/** Both sides must be different clusters, each with the network fabric installed. */
export async function checkSides(a: InBandSide, b: InBandSide): Promise<void> {
  if (a.identity.clusterId === b.identity.clusterId) {
    throw new InBandError(
      `${a.label} and ${b.label} are the same cluster (${a.identity.clusterName}, ${a.identity.clusterId}): a cluster cannot peer with itself; pass the other cluster's context to --remote-context`,
    );
  }
  for (const s of [a, b]) {
    const keys = (await s.client.list(Resources.secrets, { namespace: s.namespace, labelSelector: KEYS_LABEL })).items;
    if (keys.length === 0) {
      throw new InBandError(
        `cluster ${s.identity.clusterName} (${s.label}) has networking disabled: no gateway key Secret (label ${KEYS_LABEL}) in ${s.namespace}; ` +
          `in-band peering carries everything through the tunnel, so install liqo with its network fabric (liqo gateway, network-manager), or peer out-of-band`,
      );
    }
    const other = s === a ? b : a;
    const fc = await foreignClusterFor(s, other);
    if (fc?.spec.networkingEnabled === "No") {
      throw new InBandError(
        `ForeignCluster ${fc.metadata.name} in cluster ${s.identity.clusterName} has networking disabled (spec.networkingEnabled No): ` +
          `in-band peering needs it; unpeer it (liqoctl unpeer out-of-band ${fc.metadata.name}) first`,
      );
    }
  }
}

export async function foreignClusterFor(s: InBandSide, other: InBandSide): Promise<ForeignClusterObject | undefined> {
  const all = (await s.client.list<ForeignClusterObject>(ForeignClusterResource)).items;
  return all.find((f) => f.spec.clusterIdentity?.clusterID === other.identity.clusterId);
}

export const tenantOf = (s: InBandSide, other: InBandSide) =>
  tenantNamespaceName({ clusterID: other.identity.clusterId, clusterName: other.identity.clusterName });
const exchangeEnd = (s: InBandSide, other: InBandSide): ExchangeEnd => ({
  client: s.client,
  id: s.identity.clusterId,
  tenant: tenantOf(s, other),
});

/** In `s`: the tenant namespace for `other` and a ForeignCluster with networking (outgoing untouched). Returns what it did. */
export async function prepareSide(s: InBandSide, other: InBandSide): Promise<string[]> {
  const done: string[] = [];
  const tenant = tenantOf(s, other);
  const remote = other.identity;
  await ensureNamespace(s.client, tenant, {
    [DISCOVERY_CLUSTER_ID_LABEL]: remote.clusterId,
    [TENANT_NAMESPACE_LABEL]: "true",
  });
  let fc = await foreignClusterFor(s, other);
  if (fc?.metadata.deletionTimestamp)
    throw new InBandError(
      `ForeignCluster ${fc.metadata.name} in cluster ${s.identity.clusterName} is being deleted; wait for it to go, then run this again`,
    );
  if (!fc) {
    const taken = await s.client.find<ForeignClusterObject>(ForeignClusterResource, remote.clusterName);
    if (taken)
      throw new InBandError(
        `ForeignCluster ${remote.clusterName} in cluster ${s.identity.clusterName} stands for cluster ID ${taken.spec.clusterIdentity?.clusterID}, not ${remote.clusterId}; delete it or rename a cluster`,
      );
    fc = await s.client.create<ForeignClusterObject>(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: {
        name: remote.clusterName,
        labels: { [DISCOVERY_TYPE_LABEL]: DiscoveryType.Manual, [DISCOVERY_CLUSTER_ID_LABEL]: remote.clusterId },
      },
      spec: {
        clusterIdentity: { clusterID: remote.clusterId, clusterName: remote.clusterName },
        foreignAuthUrl: (await readAuthUrl(other.client, other.namespace)) ?? NOT_YET,
        outgoingPeeringEnabled: "No",
        incomingPeeringEnabled: "Auto",
        networkingEnabled: "Yes",
        insecureSkipTLSVerify: true,
      },
    } as KubeObject);
    done.push(`ForeignCluster ${remote.clusterName} created in cluster ${s.identity.clusterName}`);
  }
  // The network manager takes its peers from the ForeignClusters' local tenant namespace, which
  // authentication would record: here the network comes before authentication, so it is written now.
  if (!fc.status?.tenantNamespace?.local) {
    await s.client.mergePatch(
      ForeignClusterResource,
      fc.metadata.name!,
      undefined,
      { status: { tenantNamespace: { local: tenant } } },
      "status",
    );
  }
  if (fc.spec.foreignAuthUrl === NOT_YET) await markWaitingForTunnel(s, fc, other);
  return done;
}

/** AuthenticationStatus Pending, naming the tunnel, on a ForeignCluster still holding the placeholder URL. */
async function markWaitingForTunnel(s: InBandSide, fc: ForeignClusterObject, other: InBandSide): Promise<void> {
  // The ForeignCluster controller writes the status too: a conflict is retried on a fresh read.
  for (let attempt = 0; ; attempt++) {
    try {
      return await writeWaitingForTunnel(s, fc, other);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409) || attempt >= 5) throw err;
    }
  }
}

async function writeWaitingForTunnel(s: InBandSide, fc: ForeignClusterObject, other: InBandSide): Promise<void> {
  const fresh = (await s.client.find<ForeignClusterObject>(ForeignClusterResource, fc.metadata.name!)) ?? fc;
  if (fresh.spec.foreignAuthUrl !== NOT_YET) return;
  const conditions = [...(fresh.status?.peeringConditions ?? [])];
  const at = conditions.findIndex((c) => c.type === "AuthenticationStatus");
  if (at >= 0 && conditions[at]!.reason === WAITING_FOR_TUNNEL) return;
  const condition: (typeof conditions)[number] = {
    type: "AuthenticationStatus",
    status: "Pending",
    reason: WAITING_FOR_TUNNEL,
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    message: `${other.identity.clusterName}'s auth service is reached through the in-band tunnel, which is not up yet; liqoctl peer in-band sets spec.foreignAuthUrl once it is (the placeholder ${NOT_YET} is never contacted)`,
  };
  if (at >= 0) conditions[at] = condition;
  else conditions.push(condition);
  // The resourceVersion makes it a compare-and-swap: a controller's concurrent write wins, this step reruns.
  await s.client.mergePatch(
    ForeignClusterResource,
    fresh.metadata.name!,
    undefined,
    { metadata: { resourceVersion: fresh.metadata.resourceVersion }, status: { peeringConditions: conditions } },
    "status",
  );
}

export interface TunnelState {
  connected: boolean;
  /** What is missing, for progress lines and timeouts. */
  waiting?: string;
}

/** One exchange pass, then where the two TunnelEndpoints stand. */
export async function exchangeOnce(a: InBandSide, b: InBandSide): Promise<TunnelState> {
  await exchangeNetworkConfigs(exchangeEnd(a, b), exchangeEnd(b, a));
  for (const [s, other] of [
    [a, b],
    [b, a],
  ] as const) {
    const tep = (
      await s.client.list<TunnelEndpoint>(TunnelEndpointResource, {
        labelSelector: `${CLUSTER_ID_LABEL}=${other.identity.clusterId}`,
      })
    ).items[0];
    if (!tep)
      return {
        connected: false,
        waiting: `no TunnelEndpoint for ${other.identity.clusterName} in ${s.identity.clusterName} yet (is liqo network-manager running there?)`,
      };
    const c = tep.status?.connection;
    if (c?.status !== "Connected") {
      return {
        connected: false,
        waiting: `the tunnel ${s.identity.clusterName} → ${other.identity.clusterName} is ${c?.status ?? "not configured by a gateway yet"}${c?.statusMessage ? `: ${c.statusMessage}` : ""}`,
      };
    }
  }
  return { connected: true };
}

/** Points `s`'s ForeignCluster for `other` at `other`'s proxy inside the tunnel and enables the outgoing peering. */
export async function enableOutgoing(s: InBandSide, other: InBandSide): Promise<{ authUrl: string; proxyUrl: string }> {
  const endpoints = await readInBandEndpoints(other.client, other.namespace, other.identity.clusterName);
  const seen = addressSeenLocally(
    await translationSources(s.client, tenantOf(s, other), other.identity.clusterId),
    endpoints,
  );
  const token = await readAuthToken(other.client, other.namespace);
  if (!token)
    throw new InBandError(
      `cluster ${other.identity.clusterName} has no auth token (Secret ${other.namespace}/auth-token): is liqo auth running there?`,
    );
  await s.client.apply(Resources.secrets, remoteTokenSecret(s.namespace, other.identity.clusterId, token), {
    fieldManager: FIELD_MANAGER,
    force: true,
  });
  const urls = { authUrl: `https://${seen}:${endpoints.authPort}`, proxyUrl: `http://${seen}:${endpoints.proxyPort}` };
  const fc = (await foreignClusterFor(s, other))!;
  await s.client.mergePatch(ForeignClusterResource, fc.metadata.name!, undefined, {
    spec: {
      foreignAuthUrl: urls.authUrl,
      foreignProxyUrl: urls.proxyUrl,
      outgoingPeeringEnabled: "Yes",
      networkingEnabled: "Yes",
      insecureSkipTLSVerify: true,
    },
  });
  return urls;
}
