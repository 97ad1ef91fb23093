// liqoctl unpeer in-band --context A --remote-context B: tears an in-band peering down on both
// sides: both outgoing peerings disabled and awaited (virtual nodes gone), the ForeignClusters and
// stored tokens deleted (the network managers then drop the peer: NetworkConfigs, TunnelEndpoints,
// and the gateways close the tunnel), the NetworkConfig copies liqoctl made removed. Nothing to
// tear down is not an error, so it can be run again.
import { defineCommand } from "citty";
import { ForeignClusterResource, TunnelEndpointResource } from "../../core/apis/index.ts";
import { Resources } from "../../core/kube/resources.ts";
import { remoteTokenSecretName } from "../../core/peering/foreigncluster/index.ts";
import { CLUSTER_ID_LABEL } from "../../netfabric/shared/labels.ts";
import { deleteExchangedCopies } from "../../core/peering/inband/exchange.ts";
import { foreignClusterFor, tenantOf, type InBandSide } from "../../core/peering/inband/session.ts";
import { CliError, ExitCode } from "../errors.ts";
import { liqoKubeFlags, timeoutFlag, timeoutMs, waitPhases } from "../peering.ts";
import { dataLossWarning, listVolumes, remoteBackedClaims } from "../storage-guard.ts";
import { info, spinner, warn } from "../ui.ts";
import { openSides, remoteFlags } from "./peer-in-band.ts";

async function tunnelGone(a: InBandSide, b: InBandSide, timeout: number) {
  const spin = spinner(`Tearing down the tunnel between ${a.identity.clusterName} and ${b.identity.clusterName}`);
  const deadline = Date.now() + timeout;
  for (;;) {
    const left: string[] = [];
    for (const [s, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const teps = (
        await s.client.list(TunnelEndpointResource, {
          labelSelector: `${CLUSTER_ID_LABEL}=${other.identity.clusterId}`,
        })
      ).items;
      if (teps.length) left.push(`TunnelEndpoint in ${s.identity.clusterName}`);
    }
    if (!left.length) {
      spin.succeed(`Tunnel between ${a.identity.clusterName} and ${b.identity.clusterName} torn down`);
      return;
    }
    if (Date.now() > deadline) {
      spin.fail("timed out");
      throw new CliError(
        `still there after ${Math.round(timeout / 1000)}s: ${left.join(", ")} (is liqo network-manager running?)`,
        ExitCode.Failure,
      );
    }
    await Bun.sleep(500);
  }
}

export default defineCommand({
  meta: {
    name: "in-band",
    alias: "ib",
    description: "Tear down an in-band peering on both clusters (needs access to both)",
  },
  args: {
    ...remoteFlags,
    ...timeoutFlag,
    ...liqoKubeFlags,
    yes: {
      type: "boolean",
      default: false,
      description: "confirm deleting the data of liqo-class volumes that live in the other cluster",
    },
  },
  async run({ args }) {
    const timeout = timeoutMs(args.timeout);
    const [a, b] = await openSides(args);
    if (a.identity.clusterId === b.identity.clusterId)
      throw new CliError(
        `--context and --remote-context are the same cluster (${a.identity.clusterName}); pass the peer's context to --remote-context`,
      );
    const found = [
      [a, b, await foreignClusterFor(a, b)],
      [b, a, await foreignClusterFor(b, a)],
    ] as const;
    if (found.every(([, , fc]) => !fc)) {
      info(`No peering between ${a.identity.clusterName} and ${b.identity.clusterName}: nothing to tear down`);
      return;
    }
    // Either side's liqo-class volumes with data in the other go with the peering: said, and confirmed.
    for (const [s, other, fc] of args.yes ? [] : found) {
      if (!fc) continue;
      const loss = dataLossWarning(
        remoteBackedClaims(await listVolumes(s.client, warn), { clusterId: other.identity.clusterId }),
        `unpeering ${s.identity.clusterName} from ${other.identity.clusterName}`,
      );
      if (loss) throw new CliError(loss);
    }
    for (const [s, other, fc] of found) {
      if (!fc || fc.spec.outgoingPeeringEnabled === "No") continue;
      await s.client.mergePatch(ForeignClusterResource, fc.metadata.name!, undefined, {
        spec: { outgoingPeeringEnabled: "No" },
      });
      info(`outgoing peering ${s.identity.clusterName} → ${other.identity.clusterName} disabled; unpeering`);
      await waitPhases(
        s.client,
        fc.metadata.name!,
        [
          {
            type: "OutgoingPeering",
            waiting: `Unpeering ${s.identity.clusterName} from cluster ${other.identity.clusterName}`,
            done: `Unpeered ${s.identity.clusterName} from cluster ${other.identity.clusterName}`,
            until: ["None"],
          },
        ],
        timeout,
      );
    }
    for (const [s, other, fc] of found) {
      if (!fc) continue;
      await s.client.delete(ForeignClusterResource, fc.metadata.name!, undefined, { uid: fc.metadata.uid });
      await waitPhases(
        s.client,
        fc.metadata.name!,
        [
          {
            type: "OutgoingPeering",
            waiting: `Deleting ForeignCluster ${fc.metadata.name} in ${s.identity.clusterName}`,
            done: `ForeignCluster ${fc.metadata.name} deleted in ${s.identity.clusterName}`,
            until: [],
          },
        ],
        timeout,
        fc.metadata.uid!,
      );
      await s.client
        .delete(Resources.secrets, remoteTokenSecretName(other.identity.clusterId), s.namespace)
        .catch(() => undefined);
    }
    await deleteExchangedCopies(
      { client: a.client, id: a.identity.clusterId, tenant: tenantOf(a, b) },
      { client: b.client, id: b.identity.clusterId, tenant: tenantOf(b, a) },
    );
    await tunnelGone(a, b, timeout);
    info(`Successfully unpeered ${a.identity.clusterName} and ${b.identity.clusterName} (in-band)`);
  },
});
