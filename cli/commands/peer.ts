// liqoctl peer out-of-band <name> --auth-url --cluster-id --auth-token: records the provider's
// token and a ForeignCluster with outgoing peering enabled, then follows the peering phases.
// liqoctl peer <name>: enables outgoing peering on an existing ForeignCluster (e.g. the one the
// provider side made for a cluster that peered with us: the reverse direction, bidirectional).
import { defineCommand } from "citty";
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  DISCOVERY_TYPE_LABEL,
  DiscoveryType,
  ForeignClusterResource,
  type PeeringCondition,
} from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import {
  FORCE_UNPEER_ANNOTATION,
  remoteTokenSecret,
  type ForeignClusterObject,
} from "../../core/peering/foreigncluster/index.ts";
import { readRemoteToken, remoteTokenSecretName } from "../../core/peering/foreigncluster/secrets.ts";
import { ensureNamespace, readClusterIdentity } from "../../core/peering/identity.ts";
import { CliError, ExitCode } from "../errors.ts";
import {
  checkAuthUrl,
  checkClusterId,
  checkClusterName,
  foreignClusterByName,
  liqoKubeFlags,
  namedOr,
  outgoingPhases,
  timeoutFlag,
  timeoutMs,
  waitPhases,
  FAILED_STATUSES,
} from "../peering.ts";
import { info } from "../ui.ts";
import { askedResources, askFlags, requestedPatch } from "../peer-resources.ts";

/** A failed AuthenticationStatus left from an earlier attempt must not fail this one before the controller retries. */
async function resetFailedAuthentication(client: KubeClient, fc: ForeignClusterObject): Promise<void> {
  const conditions = fc.status?.peeringConditions ?? [];
  const auth = conditions.find((c) => c.type === "AuthenticationStatus");
  if (!auth || !FAILED_STATUSES.has(auth.status)) return;
  const next: PeeringCondition[] = conditions.map((c) =>
    c === auth ? { ...c, status: "Pending", reason: "Retrying", message: "liqoctl peer asked to try again" } : c,
  );
  await client.mergePatch(
    ForeignClusterResource,
    fc.metadata.name!,
    undefined,
    { status: { peeringConditions: next } },
    "status",
  );
}

const outOfBand = defineCommand({
  meta: {
    name: "out-of-band",
    alias: "oob",
    description:
      "Peer with a remote cluster through its authentication service (the command liqoctl generate peer-command prints there)",
  },
  args: {
    name: { type: "positional", required: true, description: "the remote cluster's name (the ForeignCluster's name)" },
    "auth-url": { type: "string", required: true, description: "URL of the remote authentication service" },
    "cluster-id": { type: "string", required: true, description: "the remote cluster's ID" },
    "auth-token": { type: "string", required: true, description: "the remote cluster's auth token" },
    "insecure-skip-tls-verify": {
      type: "boolean",
      default: true,
      description:
        "do not verify the auth service's certificate (Liqo's default; --no-insecure-skip-tls-verify to verify)",
    },
    networking: {
      type: "boolean",
      default: true,
      description:
        "let liqo interconnect the networks (liqo network-manager and gateways on both sides, as the chart runs them); --no-networking when the clusters' pods already reach each other",
    },
    ...askFlags,
    ...timeoutFlag,
    ...liqoKubeFlags,
  },
  async run({ args, rawArgs }) {
    checkClusterName(args.name, "the cluster name");
    checkAuthUrl(args["auth-url"]);
    checkClusterId(args["cluster-id"]);
    const asked = askedResources(args, rawArgs);
    const token = args["auth-token"].trim();
    if (!token || /\s/.test(token))
      throw new CliError("--auth-token must be the token liqoctl generate peer-command prints (no spaces)");
    const timeout = timeoutMs(args.timeout);
    const ns = args["liqo-namespace"];
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const me = await readClusterIdentity(client, ns);
    if (me?.clusterId === args["cluster-id"])
      throw new CliError(
        `--cluster-id ${args["cluster-id"]} is this cluster's own ID: a cluster cannot peer with itself; run this command on another cluster`,
        ExitCode.Failure,
      );

    await ensureNamespace(client, ns);
    await client.apply(Resources.secrets, remoteTokenSecret(ns, args["cluster-id"], token), {
      fieldManager: "liqoctl",
      force: true,
    });
    const spec = {
      clusterIdentity: { clusterID: args["cluster-id"], clusterName: args.name },
      foreignAuthUrl: args["auth-url"],
      outgoingPeeringEnabled: "Yes",
      networkingEnabled: args.networking ? "Yes" : "No",
      insecureSkipTLSVerify: args["insecure-skip-tls-verify"],
      // Asked amounts replace earlier ones; none given keeps what the ForeignCluster says.
      ...(asked ? { requestedResources: asked } : {}),
    };
    /** The ForeignCluster already standing for this cluster (by ID, else by name), or a clear error. */
    const findExisting = async (): Promise<ForeignClusterObject | undefined> => {
      const all = (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
      const sameName = all.find((f) => f.metadata.name === args.name);
      const sameId = all.find((f) => f.spec.clusterIdentity?.clusterID === args["cluster-id"]);
      if (
        sameName &&
        sameName.spec.clusterIdentity?.clusterID &&
        sameName.spec.clusterIdentity.clusterID !== args["cluster-id"]
      ) {
        throw new CliError(
          `ForeignCluster ${args.name} already stands for cluster ID ${sameName.spec.clusterIdentity.clusterID}, not ${args["cluster-id"]}; unpeer it first (liqoctl unpeer out-of-band ${args.name}) or pick another name`,
          ExitCode.Failure,
        );
      }
      return sameId ?? sameName;
    };
    const enable = async (existing: ForeignClusterObject) => {
      if (existing.metadata.deletionTimestamp)
        throw new CliError(
          `ForeignCluster ${existing.metadata.name} is being deleted (unpeering); wait for it to go, then run this again`,
          ExitCode.Failure,
        );
      await client.mergePatch(ForeignClusterResource, existing.metadata.name!, undefined, {
        metadata: { annotations: { [FORCE_UNPEER_ANNOTATION]: null } },
        spec: {
          ...spec,
          // Amounts asked before and not now are removed.
          ...requestedPatch(existing.spec.requestedResources, asked),
          clusterIdentity: {
            clusterID: args["cluster-id"],
            clusterName: existing.spec.clusterIdentity?.clusterName ?? args.name,
          },
        },
      });
      await resetFailedAuthentication(client, existing);
      info(`ForeignCluster ${existing.metadata.name} updated: outgoing peering enabled`);
    };
    let existing = await findExisting();
    if (existing) await enable(existing);
    else {
      try {
        await client.create(ForeignClusterResource, {
          apiVersion: "discovery.liqo.io/v1alpha1",
          kind: "ForeignCluster",
          metadata: {
            name: args.name,
            labels: { [DISCOVERY_TYPE_LABEL]: DiscoveryType.Manual, [DISCOVERY_CLUSTER_ID_LABEL]: args["cluster-id"] },
          },
          spec,
        } as KubeObject);
        info(`ForeignCluster ${args.name} created`);
      } catch (err) {
        // The peer peered with us at the same moment: our auth service made the ForeignCluster for
        // its incoming peering between our look and our create. Enable the outgoing side on it.
        if (!(err instanceof KubeApiError && err.status === 409)) throw err;
        existing = await findExisting();
        if (!existing) throw err;
        await enable(existing);
      }
    }
    await waitPhases(
      client,
      existing?.metadata.name ?? args.name,
      outgoingPhases(args.name, args.networking),
      timeout,
      undefined,
      { liqoNamespace: ns },
    );
  },
});

/** `liqoctl peer <name>`: the ForeignCluster must exist. */
const peerNamed = (name: string) =>
  defineCommand({
    meta: { name, description: `Enable the outgoing peering with ${name}` },
    args: { ...askFlags, ...timeoutFlag, ...liqoKubeFlags },
    async run({ args, rawArgs }) {
      const timeout = timeoutMs(args.timeout);
      const asked = askedResources(args, rawArgs);
      const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
      const fc = await foreignClusterByName(client, name);
      if (fc.metadata.deletionTimestamp)
        throw new CliError(`ForeignCluster ${name} is being deleted`, ExitCode.Failure);
      // The reverse shortcut: a cluster that peered with us sent its token along (kept by our auth
      // service); without one there is nothing to authenticate with, so say so before changing anything.
      const id = fc.spec.clusterIdentity?.clusterID;
      const ns = args["liqo-namespace"];
      if (id && !fc.status?.tenantNamespace?.remote && !(await readRemoteToken(client, ns, id))) {
        throw new CliError(
          `no auth token for ${name}: the Secret ${ns}/${remoteTokenSecretName(id)} is missing (${name} sends its token when it peers with this cluster, ` +
            `unless its ForeignCluster for this cluster says incomingPeeringEnabled: No); run liqoctl generate peer-command on ${name} and the printed command here`,
          ExitCode.Failure,
        );
      }
      await client.mergePatch(ForeignClusterResource, name, undefined, {
        metadata: { annotations: { [FORCE_UNPEER_ANNOTATION]: null } },
        spec: { outgoingPeeringEnabled: "Yes", ...requestedPatch(fc.spec.requestedResources, asked) },
      });
      await resetFailedAuthentication(client, fc);
      info(`outgoing peering with ${name} enabled`);
      await waitPhases(
        client,
        name,
        outgoingPhases(fc.spec.clusterIdentity?.clusterName ?? name, fc.spec.networkingEnabled === "Yes"),
        timeout,
        undefined,
        { liqoNamespace: args["liqo-namespace"] },
      );
    },
  });

export default defineCommand({
  meta: {
    name: "peer",
    description:
      "Enable the outgoing peering with a cluster: liqoctl peer <name> (an existing ForeignCluster), or liqoctl peer out-of-band <name> --auth-url --cluster-id --auth-token",
  },
  subCommands: namedOr(
    { "out-of-band": outOfBand, "in-band": () => import("./peer-in-band.ts").then((m) => m.default) },
    peerNamed,
  ),
});
