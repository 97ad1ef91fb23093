// liqoctl peer in-band --context A --remote-context B [--bidirectional]: Liqo v0.5's in-band
// control plane. liqoctl holds both kubeconfigs: it prepares both clusters (tenant namespaces,
// ForeignClusters with networking), exchanges the NetworkConfigs itself until the WireGuard tunnel
// is connected, then points A's ForeignCluster at B's auth service and API server proxy at their
// addresses inside the tunnel, so authentication and every later API call travel through it.
// Idempotent: a second run finds everything in place (and --bidirectional adds the reverse).
import { defineCommand } from "citty";
import { createKubeClient } from "../../core/kube/client.ts";
import {
  checkSides,
  enableOutgoing,
  exchangeOnce,
  InBandError,
  openSide,
  prepareSide,
  type InBandSide,
} from "../../core/peering/inband/session.ts";
import { CliError, ExitCode } from "../errors.ts";
import { liqoKubeFlags, outgoingPhases, timeoutFlag, timeoutMs, waitPhases } from "../peering.ts";
import { info, spinner } from "../ui.ts";

export const remoteFlags = {
  "remote-kubeconfig": {
    type: "string",
    description: "kubeconfig of the remote cluster (default: the same as --kubeconfig)",
  },
  "remote-context": { type: "string", description: "kubeconfig context of the remote cluster" },
  "remote-liqo-namespace": {
    type: "string",
    alias: "remote-namespace",
    description: "namespace where liqo runs in the remote cluster (default: the same as --liqo-namespace)",
  },
} as const;

export interface SidesArgs {
  kubeconfig?: string;
  context?: string;
  "remote-kubeconfig"?: string;
  "remote-context"?: string;
  "remote-liqo-namespace"?: string;
  "liqo-namespace": string;
}

/** Both clusters, checked: reachable, liqo installed, two different clusters. */
export async function openSides(args: SidesArgs): Promise<[InBandSide, InBandSide]> {
  if (!args["remote-context"] && !args["remote-kubeconfig"])
    throw new CliError(
      "in-band peering needs the remote cluster too: pass --remote-context (and --remote-kubeconfig if it is in another file)",
    );
  const local = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
  const remote = createKubeClient({
    kubeconfig: args["remote-kubeconfig"] ?? args.kubeconfig,
    context: args["remote-context"],
  });
  const ns = args["liqo-namespace"];
  try {
    const a = await openSide(args.context ? `--context ${args.context}` : "the local kubeconfig", local, ns);
    const b = await openSide(
      args["remote-context"] ? `--remote-context ${args["remote-context"]}` : "--remote-kubeconfig",
      remote,
      args["remote-liqo-namespace"] ?? ns,
    );
    return [a, b];
  } catch (err) {
    throw err instanceof InBandError ? new CliError(err.message, ExitCode.Failure) : err;
  }
}

export async function waitTunnel(a: InBandSide, b: InBandSide, timeout: number): Promise<void> {
  const name = b.identity.clusterName;
  const spin = spinner(`Establishing the network with cluster ${name}`);
  const deadline = Date.now() + timeout;
  for (;;) {
    const state = await exchangeOnce(a, b);
    if (state.connected) {
      spin.succeed(`Network established with cluster ${name}: the tunnel is connected on both sides`);
      return;
    }
    if (Date.now() > deadline) {
      spin.fail(`Establishing the network with cluster ${name}: timed out`);
      throw new CliError(
        `the tunnel with ${name} did not connect within ${Math.round(timeout / 1000)}s: ${state.waiting}`,
        ExitCode.Failure,
      );
    }
    spin.update(`Establishing the network with cluster ${name} (${state.waiting})`);
    await Bun.sleep(500);
  }
}

async function outgoing(from: InBandSide, to: InBandSide, timeout: number) {
  const urls = await enableOutgoing(from, to);
  info(
    `ForeignCluster ${to.identity.clusterName} in cluster ${from.identity.clusterName}: outgoing peering enabled through the tunnel (auth ${urls.authUrl}, API proxy ${urls.proxyUrl})`,
  );
  await waitPhases(from.client, to.identity.clusterName, outgoingPhases(to.identity.clusterName, true), timeout);
}

export default defineCommand({
  meta: {
    name: "in-band",
    alias: "ib",
    description:
      "Peer with a remote cluster carrying the control plane inside the network tunnel (needs access to both clusters)",
  },
  args: {
    ...remoteFlags,
    bidirectional: { type: "boolean", default: false, description: "also peer the remote cluster with this one" },
    ...timeoutFlag,
    ...liqoKubeFlags,
  },
  async run({ args }) {
    const timeout = timeoutMs(args.timeout);
    const [a, b] = await openSides(args);
    try {
      await checkSides(a, b);
      info(
        `In-band peering: cluster ${a.identity.clusterName} (${a.identity.clusterId}) → cluster ${b.identity.clusterName} (${b.identity.clusterId})${args.bidirectional ? " and back" : ""}`,
      );
      for (const line of [...(await prepareSide(a, b)), ...(await prepareSide(b, a))]) info(line);
      await waitTunnel(a, b, timeout);
      await outgoing(a, b, timeout);
      if (args.bidirectional) await outgoing(b, a, timeout);
    } catch (err) {
      throw err instanceof InBandError ? new CliError(err.message, ExitCode.Failure) : err;
    }
  },
});
