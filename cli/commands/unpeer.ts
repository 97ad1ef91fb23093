// liqoctl unpeer <name>: disables the outgoing peering (the ForeignCluster stays, so liqoctl peer
// <name> re-enables it). liqoctl unpeer out-of-band <name>: unpeers and deletes the ForeignCluster
// and the stored token. --force: do not wait for a remote cluster that is unreachable.
import { defineCommand } from "citty";
import { ForeignClusterResource } from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources } from "../../core/kube/resources.ts";
import { FORCE_UNPEER_ANNOTATION, remoteTokenSecretName } from "../../core/peering/foreigncluster/index.ts";
import { foreignClusterByName, liqoKubeFlags, namedOr, timeoutFlag, timeoutMs, waitPhases } from "../peering.ts";
import { CliError } from "../errors.ts";
import { dataLossWarning, listVolumes, remoteBackedClaims } from "../storage-guard.ts";
import { info, warn } from "../ui.ts";

const forceFlag = {
  force: {
    type: "boolean",
    default: false,
    description: "tear down without waiting for the remote cluster (when it is unreachable for good)",
  },
  yes: {
    type: "boolean",
    default: false,
    description: "confirm deleting the data of liqo-class volumes that live in that cluster",
  },
} as const;

/** Unpeering deletes the peer's copies of our claims and their data: said, and confirmed with --yes. */
async function confirmDataLoss(client: KubeClient, name: string, clusterId: string | undefined, yes: boolean) {
  if (!clusterId || yes) return;
  const loss = dataLossWarning(
    remoteBackedClaims(await listVolumes(client, warn), { clusterId }),
    `unpeering from ${name}`,
  );
  if (loss) throw new CliError(loss);
}

async function markForce(client: KubeClient, name: string, force: boolean) {
  if (force)
    await client.mergePatch(ForeignClusterResource, name, undefined, {
      metadata: { annotations: { [FORCE_UNPEER_ANNOTATION]: "true" } },
    });
}

const outOfBand = defineCommand({
  meta: {
    name: "out-of-band",
    alias: "oob",
    description: "Unpeer from a cluster peered out-of-band and forget it (ForeignCluster and token deleted)",
  },
  args: {
    name: { type: "positional", required: true, description: "the ForeignCluster's name" },
    ...forceFlag,
    ...timeoutFlag,
    ...liqoKubeFlags,
  },
  async run({ args }) {
    const timeout = timeoutMs(args.timeout);
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const fc = await foreignClusterByName(client, args.name);
    await confirmDataLoss(client, args.name, fc.spec.clusterIdentity?.clusterID, args.yes);
    await markForce(client, args.name, args.force);
    await client.delete(ForeignClusterResource, args.name, undefined, { uid: fc.metadata.uid });
    info(`ForeignCluster ${args.name} deleted; unpeering`);
    await waitPhases(
      client,
      args.name,
      [
        {
          type: "OutgoingPeering",
          waiting: `Unpeering from cluster ${args.name}`,
          done: `Unpeered from cluster ${args.name}`,
          until: [],
        },
      ],
      timeout,
      fc.metadata.uid!,
    );
    const id = fc.spec.clusterIdentity?.clusterID;
    if (id) await client.delete(Resources.secrets, remoteTokenSecretName(id), args["liqo-namespace"]);
    info(`Successfully unpeered from cluster ${args.name}`);
  },
});

const unpeerNamed = (name: string) =>
  defineCommand({
    meta: { name, description: `Disable the outgoing peering with ${name}` },
    args: { ...forceFlag, ...timeoutFlag, ...liqoKubeFlags },
    async run({ args }) {
      const timeout = timeoutMs(args.timeout);
      const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
      const fc = await foreignClusterByName(client, name);
      await confirmDataLoss(client, name, fc.spec.clusterIdentity?.clusterID, args.yes);
      await markForce(client, name, args.force);
      await client.mergePatch(ForeignClusterResource, name, undefined, { spec: { outgoingPeeringEnabled: "No" } });
      info(`outgoing peering with ${name} disabled; unpeering`);
      await waitPhases(
        client,
        name,
        [
          {
            type: "OutgoingPeering",
            waiting: `Unpeering from cluster ${name}`,
            done: `Unpeered from cluster ${name}`,
            until: ["None"],
          },
        ],
        timeout,
      );
    },
  });

export default defineCommand({
  meta: {
    name: "unpeer",
    description:
      "Disable the outgoing peering with a cluster: liqoctl unpeer <name>, or liqoctl unpeer out-of-band <name> to also forget it",
  },
  subCommands: namedOr(
    { "out-of-band": outOfBand, "in-band": () => import("./unpeer-in-band.ts").then((m) => m.default) },
    unpeerNamed,
  ),
});
