// Phase 1 of an outgoing peering (AuthenticationStatus): make sure the remote cluster is who the
// ForeignCluster says, trade the pre-shared token for an identity there, and keep that identity
// (a kubeconfig) in a Secret of the local tenant namespace. Refuses to peer with this cluster
// itself and with a cluster ID another ForeignCluster already claims.
import { DISCOVERY_CLUSTER_ID_LABEL, TENANT_NAMESPACE_LABEL, type ClusterIdentity } from "../../apis/index.ts";
import { RetryAfterError } from "../../kube/errors.ts";
import { tenantNamespaceName } from "../../offloading/names.ts";
import { IN_BAND_PENDING_AUTH_URL, WAITING_FOR_TUNNEL } from "../auth-url.ts";
import { ensureNamespace } from "../identity.ts";
import { readAuthToken } from "../auth/token.ts";
import { incomingAllowed } from "../incoming.ts";
import { fetchRemoteIds, requestIdentity } from "./auth-client.ts";
import { authenticationFailure, duplicateOwner, type ForeignClusterObject } from "./conditions.ts";
import type { ReconcileContext, StatusWriter } from "./context.ts";
import { readIdentity, readRemoteToken, remoteTokenSecretName, storeIdentity, type StoredIdentity } from "./secrets.ts";

export interface Authenticated extends StoredIdentity {
  remote: ClusterIdentity;
  localNamespace: string;
}

/** Thrown after the condition is written, to re-check later (auth service down, token missing...). */
const retry = (ms: number, why: string) => new RetryAfterError(ms, why);

export async function authenticate(
  ctx: ReconcileContext,
  st: StatusWriter,
  all: readonly ForeignClusterObject[],
): Promise<Authenticated | undefined> {
  const { cfg } = ctx;
  const fc = st.fc;
  const remote = fc.spec.clusterIdentity;
  const name = fc.metadata.name!;
  const fail = async (status: "Error" | "Denied" | "Pending", reason: string, message: string) => {
    st.set({ type: "AuthenticationStatus", status, reason, message });
    st.set({
      type: "OutgoingPeering",
      status: "None",
      reason: "AuthenticationNotEstablished",
      message: `waiting for authentication with ${name}: ${message}`,
    });
    await st.flush();
  };
  if (!remote?.clusterID) {
    await fail(
      "Error",
      "MissingClusterIdentity",
      `ForeignCluster ${name} has no spec.clusterIdentity.clusterID; set it (liqoctl peer out-of-band ${name} --cluster-id <id> does)`,
    );
    return undefined;
  }
  if (remote.clusterID === cfg.local.clusterId) {
    await fail(
      "Error",
      "SelfPeering",
      `ForeignCluster ${name} has this cluster's own ID ${remote.clusterID}: a cluster cannot peer with itself; delete it (kubectl delete foreigncluster ${name})`,
    );
    return undefined;
  }
  const owner = duplicateOwner(fc, all);
  if (owner) {
    await fail(
      "Error",
      "DuplicateClusterID",
      `cluster ID ${remote.clusterID} already belongs to ForeignCluster ${owner.metadata.name}; two ForeignClusters cannot stand for one cluster: delete ${name} (or fix its spec.clusterIdentity.clusterID)`,
    );
    return undefined;
  }

  const localNamespace = tenantNamespaceName(remote);
  await ensureNamespace(cfg.client, localNamespace, {
    [DISCOVERY_CLUSTER_ID_LABEL]: remote.clusterID,
    [TENANT_NAMESPACE_LABEL]: "true",
  });
  st.tenantNamespace({ local: localNamespace });

  const stored = await readIdentity(cfg.client, localNamespace, remote.clusterID);
  if (stored) {
    st.set({
      type: "AuthenticationStatus",
      status: "Established",
      reason: "IdentityAccepted",
      message: `identity issued by ${remote.clusterName} kept in Secret ${localNamespace}/remote-identity-${remote.clusterID}`,
    });
    st.tenantNamespace({ remote: stored.remoteNamespace });
    return { ...stored, remote, localNamespace };
  }

  const url = fc.spec.foreignAuthUrl;
  if (url === IN_BAND_PENDING_AUTH_URL) {
    // liqoctl peer in-band replaces the placeholder once the tunnel is up; never dial it.
    await fail(
      "Pending",
      WAITING_FOR_TUNNEL,
      `the auth service of ${remote.clusterName} is reached through the in-band tunnel, which is not up yet (liqoctl peer in-band sets spec.foreignAuthUrl when it is)`,
    );
    throw retry(5000, `in-band tunnel to ${name} not up`);
  }
  const opts = { insecureSkipTLSVerify: fc.spec.insecureSkipTLSVerify ?? cfg.insecureAuth ?? true };
  const before = st.fc.status?.peeringConditions?.find((c) => c.type === "AuthenticationStatus")?.status;
  // A refusal stays on show while we try again; otherwise say what we are doing.
  if (before !== "Denied" && before !== "Error") {
    st.set({
      type: "AuthenticationStatus",
      status: "Pending",
      reason: "Authenticating",
      message: `asking ${url} for an identity`,
    });
    await st.flush();
  }
  const ids = await fetchRemoteIds(url, opts);
  if (!ids.ok) {
    await fail(
      "Pending",
      ids.status === 0 ? "AuthServiceUnreachable" : "AuthServiceError",
      `${ids.message}; retrying (is liqo auth running in ${remote.clusterName} and spec.foreignAuthUrl right?)`,
    );
    throw retry(5000, `auth service of ${name} not answering`);
  }
  if (ids.value.clusterId !== remote.clusterID) {
    await fail(
      "Error",
      "ClusterIDMismatch",
      `${url} belongs to cluster ${ids.value.clusterName} (${ids.value.clusterId}), not ${remote.clusterID} as spec.clusterIdentity says; fix the auth URL or the cluster ID (liqoctl generate peer-command on the remote cluster prints both)`,
    );
    throw retry(30_000, "cluster ID mismatch");
  }
  const token = await readRemoteToken(cfg.client, cfg.liqoNamespace, remote.clusterID);
  if (!token) {
    await fail(
      "Pending",
      "TokenMissing",
      `no auth token for ${remote.clusterName}: the Secret ${cfg.liqoNamespace}/${remoteTokenSecretName(remote.clusterID)} is missing or empty; run the command liqoctl generate peer-command prints on ${remote.clusterName}`,
    );
    throw retry(10_000, "auth token missing");
  }
  // Our own token goes along only if this cluster lets the provider peer back (the reverse shortcut).
  const peerToken = incomingAllowed(fc)
    ? await readAuthToken(cfg.client, cfg.liqoNamespace).catch(() => undefined)
    : undefined;
  const issued = await requestIdentity(
    url,
    { clusterID: cfg.local.clusterId, clusterName: cfg.local.clusterName },
    token,
    { ...opts, peerToken },
  );
  if (!issued.ok) {
    const previous = st.fc.status?.peeringConditions?.find((c) => c.type === "AuthenticationStatus");
    if (issued.status === 429 && previous && (previous.status === "Denied" || previous.status === "Error")) {
      // Throttled because of our earlier refused attempts: the refusal is still the news.
      throw retry((issued.retryAfterSeconds ?? 60) * 1000, "rate limited after a refusal");
    }
    const update =
      issued.status === 0
        ? {
            type: "AuthenticationStatus" as const,
            status: "Pending" as const,
            reason: "AuthServiceUnreachable",
            message: `${issued.message}; retrying`,
          }
        : authenticationFailure(issued.status, issued.message, remote.clusterName, issued.reason);
    await fail(update.status as "Error" | "Denied" | "Pending", update.reason, update.message);
    // Refusals are re-tried slowly: the user fixes them by writing a new token or removing the other cluster.
    throw retry(update.status === "Pending" ? (issued.retryAfterSeconds ?? 5) * 1000 : 60_000, update.reason);
  }
  const identity = { kubeconfig: issued.value.kubeconfig, remoteNamespace: issued.value.namespace };
  await storeIdentity(cfg.client, localNamespace, remote.clusterID, identity);
  st.set({
    type: "AuthenticationStatus",
    status: "Established",
    reason: "IdentityAccepted",
    message: `identity issued by ${remote.clusterName} (tenant namespace ${identity.remoteNamespace} there)`,
  });
  st.tenantNamespace({ remote: identity.remoteNamespace });
  await st.flush();
  ctx.log.info("authenticated with remote cluster", {
    remoteClusterId: remote.clusterID,
    remoteNamespace: identity.remoteNamespace,
  });
  return { ...identity, remote, localNamespace };
}
