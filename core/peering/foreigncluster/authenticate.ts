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
import { fetchRemoteIds, requestIdentity, type AuthAnswer } from "./auth-client.ts";
import { authenticationFailure, duplicateOwner, type ForeignClusterObject } from "./conditions.ts";
import type { ReconcileContext, StatusWriter } from "./context.ts";
import { readIdentity, readRemoteToken, remoteTokenSecretName, storeIdentity, type StoredIdentity } from "./secrets.ts";

export interface Authenticated extends StoredIdentity {
  remote: ClusterIdentity;
  localNamespace: string;
}

/** Thrown after the condition is written, to re-check later (auth service down, token missing...). */
const retry = (ms: number, why: string) => new RetryAfterError(ms, why);
/** What the steps of one authentication share. */
interface Authentication {
  ctx: ReconcileContext;
  st: StatusWriter;
  /** The ForeignCluster as this reconcile read it, and its name. */
  fc: ForeignClusterObject;
  name: string;
  /** The cluster it stands for, once identityError found nothing wrong with it. */
  remote: ClusterIdentity;
  localNamespace: string;
}

/** An answer of the auth service that is not what we asked for. */
type AuthFailure = Extract<AuthAnswer<unknown>, { ok: false }>;

/**
 * Authenticates with the remote cluster, one step after the other: each step either ensures its
 * part and goes on, or writes why authentication is not established and throws RetryAfterError.
 * Returns undefined, with nothing to retry, when the ForeignCluster itself must be fixed.
 */
export async function authenticate(
  ctx: ReconcileContext,
  st: StatusWriter,
  all: readonly ForeignClusterObject[],
): Promise<Authenticated | undefined> {
  const fc = st.fc;
  const name = fc.metadata.name!;
  const invalid = identityError(ctx, fc, all);
  if (invalid) {
    await fail({ st, name }, "Error", invalid.reason, invalid.message);
    return undefined;
  }
  const remote = fc.spec.clusterIdentity!;
  const a: Authentication = { ctx, st, fc, name, remote, localNamespace: tenantNamespaceName(remote) };
  await ensureTenantNamespace(a);
  const stored = await readIdentity(ctx.cfg.client, a.localNamespace, remote.clusterID);
  if (stored) return keepIdentity(a, stored);
  const url = await authServiceUrl(a);
  await reportAuthenticating(a, url);
  await checkAuthService(a, url);
  const token = await remoteToken(a);
  const identity = await requestNewIdentity(a, url, token);
  return storeNewIdentity(a, identity);
}

/** Writes why authentication is not established, and that the outgoing peering waits for it. */
async function fail(
  a: Pick<Authentication, "st" | "name">,
  status: "Error" | "Denied" | "Pending",
  reason: string,
  message: string,
): Promise<void> {
  a.st.set({ type: "AuthenticationStatus", status, reason, message });
  a.st.set({
    type: "OutgoingPeering",
    status: "None",
    reason: "AuthenticationNotEstablished",
    message: `waiting for authentication with ${a.name}: ${message}`,
  });
  await a.st.flush();
}

/** What keeps the ForeignCluster from authenticating at all: no cluster ID, this cluster's own, or another's. */
function identityError(
  ctx: ReconcileContext,
  fc: ForeignClusterObject,
  all: readonly ForeignClusterObject[],
): { reason: string; message: string } | undefined {
  const remote = fc.spec.clusterIdentity;
  const name = fc.metadata.name!;
  if (!remote?.clusterID)
    return {
      reason: "MissingClusterIdentity",
      message: `ForeignCluster ${name} has no spec.clusterIdentity.clusterID; set it (liqoctl peer out-of-band ${name} --cluster-id <id> does)`,
    };
  if (remote.clusterID === ctx.cfg.local.clusterId)
    return {
      reason: "SelfPeering",
      message: `ForeignCluster ${name} has this cluster's own ID ${remote.clusterID}: a cluster cannot peer with itself; delete it (kubectl delete foreigncluster ${name})`,
    };
  const owner = duplicateOwner(fc, all);
  if (owner)
    return {
      reason: "DuplicateClusterID",
      message: `cluster ID ${remote.clusterID} already belongs to ForeignCluster ${owner.metadata.name}; two ForeignClusters cannot stand for one cluster: delete ${name} (or fix its spec.clusterIdentity.clusterID)`,
    };
  return undefined;
}

/** How the auth service is called: its certificate is checked unless the ForeignCluster or the flags say not to. */
const authCallOptions = (a: Authentication) => ({
  insecureSkipTLSVerify: a.fc.spec.insecureSkipTLSVerify ?? a.ctx.cfg.insecureAuth ?? true,
});

/** Ensures the local tenant namespace exists and the status names it. */
async function ensureTenantNamespace(a: Authentication): Promise<void> {
  await ensureNamespace(a.ctx.cfg.client, a.localNamespace, {
    [DISCOVERY_CLUSTER_ID_LABEL]: a.remote.clusterID,
    [TENANT_NAMESPACE_LABEL]: "true",
  });
  a.st.tenantNamespace({ local: a.localNamespace });
}

/** Reports the identity already kept in its Secret as established. */
function keepIdentity(a: Authentication, stored: StoredIdentity): Authenticated {
  const { st, remote, localNamespace } = a;
  st.set({
    type: "AuthenticationStatus",
    status: "Established",
    reason: "IdentityAccepted",
    message: `identity issued by ${remote.clusterName} kept in Secret ${localNamespace}/remote-identity-${remote.clusterID}`,
  });
  st.tenantNamespace({ remote: stored.remoteNamespace });
  return { ...stored, remote, localNamespace };
}

/** The remote auth service's URL; waits while the in-band tunnel to it is not up. */
async function authServiceUrl(a: Authentication): Promise<string> {
  const url = a.fc.spec.foreignAuthUrl;
  if (url === IN_BAND_PENDING_AUTH_URL) {
    // liqoctl peer in-band replaces the placeholder once the tunnel is up; never dial it.
    await fail(
      a,
      "Pending",
      WAITING_FOR_TUNNEL,
      `the auth service of ${a.remote.clusterName} is reached through the in-band tunnel, which is not up yet (liqoctl peer in-band sets spec.foreignAuthUrl when it is)`,
    );
    throw retry(5000, `in-band tunnel to ${a.name} not up`);
  }
  return url;
}

/** Reports that we ask the auth service for an identity, unless an earlier refusal is on show. */
async function reportAuthenticating(a: Authentication, url: string): Promise<void> {
  const { st } = a;
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
}

/** Ensures the auth service answers and belongs to the cluster spec.clusterIdentity names. */
async function checkAuthService(a: Authentication, url: string): Promise<void> {
  const { name, remote } = a;
  const ids = await fetchRemoteIds(url, authCallOptions(a));
  if (!ids.ok) {
    await fail(
      a,
      "Pending",
      ids.status === 0 ? "AuthServiceUnreachable" : "AuthServiceError",
      `${ids.message}; retrying (is liqo auth running in ${remote.clusterName} and spec.foreignAuthUrl right?)`,
    );
    throw retry(5000, `auth service of ${name} not answering`);
  }
  if (ids.value.clusterId !== remote.clusterID) {
    await fail(
      a,
      "Error",
      "ClusterIDMismatch",
      `${url} belongs to cluster ${ids.value.clusterName} (${ids.value.clusterId}), not ${remote.clusterID} as spec.clusterIdentity says; fix the auth URL or the cluster ID (liqoctl generate peer-command on the remote cluster prints both)`,
    );
    throw retry(30_000, "cluster ID mismatch");
  }
}

/** The token the remote cluster issued for us; waits while its Secret is missing or empty. */
async function remoteToken(a: Authentication): Promise<string> {
  const { cfg } = a.ctx;
  const { remote } = a;
  const token = await readRemoteToken(cfg.client, cfg.liqoNamespace, remote.clusterID);
  if (!token) {
    await fail(
      a,
      "Pending",
      "TokenMissing",
      `no auth token for ${remote.clusterName}: the Secret ${cfg.liqoNamespace}/${remoteTokenSecretName(remote.clusterID)} is missing or empty; run the command liqoctl generate peer-command prints on ${remote.clusterName}`,
    );
    throw retry(10_000, "auth token missing");
  }
  return token;
}

/** Trades the token for a new identity in the remote cluster; a refusal is reported and re-tried. */
async function requestNewIdentity(a: Authentication, url: string, token: string): Promise<StoredIdentity> {
  const { cfg } = a.ctx;
  // Our own token goes along only if this cluster lets the provider peer back (the reverse shortcut).
  const peerToken = incomingAllowed(a.fc)
    ? await readAuthToken(cfg.client, cfg.liqoNamespace).catch(() => undefined)
    : undefined;
  const issued = await requestIdentity(
    url,
    { clusterID: cfg.local.clusterId, clusterName: cfg.local.clusterName },
    token,
    { ...authCallOptions(a), peerToken },
  );
  if (!issued.ok) return identityRefused(a, issued);
  return { kubeconfig: issued.value.kubeconfig, remoteNamespace: issued.value.namespace };
}

/** Reports why no identity was issued, and re-queues: soon while the service is unreachable, slowly after a refusal. */
async function identityRefused(a: Authentication, issued: AuthFailure): Promise<never> {
  const { st, remote } = a;
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
  await fail(a, update.status as "Error" | "Denied" | "Pending", update.reason, update.message);
  // Refusals are re-tried slowly: the user fixes them by writing a new token or removing the other cluster.
  throw retry(update.status === "Pending" ? (issued.retryAfterSeconds ?? 5) * 1000 : 60_000, update.reason);
}

/** Ensures the new identity is kept in its Secret, and reports authentication established. */
async function storeNewIdentity(a: Authentication, identity: StoredIdentity): Promise<Authenticated> {
  const { ctx, st, remote, localNamespace } = a;
  await storeIdentity(ctx.cfg.client, localNamespace, remote.clusterID, identity);
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
