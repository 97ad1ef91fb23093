// liqoctl generate peer-command: prints the `liqoctl peer out-of-band` command another cluster runs
// to peer with this one (this cluster's name, ID, auth URL and auth token), as Liqo's does.
import { defineCommand } from "citty";
import { createKubeClient } from "../../core/kube/client.ts";
import { readAuthToken } from "../../core/peering/auth/index.ts";
import { readAuthUrl } from "../../core/peering/auth-url.ts";
import { readClusterIdentity } from "../../core/peering/identity.ts";
import { CliError, ExitCode } from "../errors.ts";
import { checkAuthUrl, liqoKubeFlags } from "../peering.ts";

export function peerCommand(o: {
  clusterName: string;
  authUrl: string;
  clusterId: string;
  token: string;
  program?: string;
}): string {
  return `${o.program ?? "liqoctl"} peer out-of-band ${o.clusterName} --auth-url ${o.authUrl} --cluster-id ${o.clusterId} --auth-token ${o.token}`;
}

const peerCommandCmd = defineCommand({
  meta: { name: "peer-command", description: "Print the command another cluster runs to peer with this one" },
  args: {
    "only-command": { type: "boolean", default: false, description: "print only the command (for scripts)" },
    "auth-url": {
      type: "string",
      description:
        "URL of this cluster's authentication service (default: the liqo-auth Service's address, or what liqo auth recorded)",
    },
    ...liqoKubeFlags,
  },
  async run({ args }) {
    if (args["auth-url"] !== undefined) checkAuthUrl(args["auth-url"]);
    const ns = args["liqo-namespace"];
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const identity = await readClusterIdentity(client, ns);
    if (!identity)
      throw new CliError(
        `this cluster has no liqo identity (ConfigMap ${ns}/liqo-clusterid-configmap); is liqo installed (liqo auth started) here?`,
        ExitCode.Failure,
      );
    const token = await readAuthToken(client, ns);
    if (!token)
      throw new CliError(
        `no auth token (Secret ${ns}/auth-token); start liqo auth, which creates it`,
        ExitCode.Failure,
      );
    const authUrl = args["auth-url"] ?? (await readAuthUrl(client, ns));
    if (!authUrl)
      throw new CliError(
        `cannot tell the URL of this cluster's authentication service: no liqo-auth Service address and nothing recorded by liqo auth; pass --auth-url`,
        ExitCode.Failure,
      );
    const command = peerCommand({ clusterName: identity.clusterName, authUrl, clusterId: identity.clusterId, token });
    if (args["only-command"]) {
      console.log(command);
      return;
    }
    console.log(
      "Execute this command on a *different* cluster to enable an outgoing peering with the current cluster:\n",
    );
    console.log(command);
  },
});

export default defineCommand({
  meta: { name: "generate", description: "Generate commands and manifests" },
  subCommands: { "peer-command": peerCommandCmd },
});
