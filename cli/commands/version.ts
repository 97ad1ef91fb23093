// liqoctl version: the client's version and, unless --client, the server's: the version label the
// chart puts on liqo's Deployments and the cluster identity, or "not installed".
import { defineCommand } from "citty";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { CliError } from "../errors.ts";
import { clientVersion, clientVersionOutput } from "../version.ts";

export interface ServerVersion {
  installed: boolean;
  version?: string;
  clusterId?: string;
  clusterName?: string;
  components?: string[];
}

export async function serverVersion(o: {
  kubeconfig?: string;
  context?: string;
  namespace: string;
}): Promise<ServerVersion> {
  // Loaded here, not at the top: `version --client` must start as fast as an empty program, and
  // the Kubernetes client is much of liqoctl's code to parse.
  const { createKubeClient } = await import("../../core/kube/client.ts");
  const { CLUSTER_ID_CONFIGMAP, CLUSTER_ID_KEY, CLUSTER_NAME_KEY } = await import("../../core/peering/identity.ts");
  const client = createKubeClient({ kubeconfig: o.kubeconfig, context: o.context });
  const deployments = await client.list(Resources.deployments, {
    namespace: o.namespace,
    labelSelector: "app.kubernetes.io/part-of=liqo",
  });
  const identity = await client.find<KubeObject & { data?: Record<string, string> }>(
    Resources.configMaps,
    CLUSTER_ID_CONFIGMAP,
    o.namespace,
  );
  if (!deployments.items.length && !identity) return { installed: false };
  const versions = [
    ...new Set(deployments.items.map((d) => d.metadata.labels?.["app.kubernetes.io/version"]).filter(Boolean)),
  ] as string[];
  return {
    installed: true,
    version: versions.join(", ") || "unknown (no liqo Deployment carries app.kubernetes.io/version)",
    clusterId: identity?.data?.[CLUSTER_ID_KEY],
    clusterName: identity?.data?.[CLUSTER_NAME_KEY],
    components: deployments.items
      .map((d) => d.metadata.labels?.["app.kubernetes.io/component"] ?? d.metadata.name ?? "")
      .sort(),
  };
}

export default defineCommand({
  meta: { name: "version", description: "Print the liqoctl version and the version of liqo installed in the cluster" },
  args: {
    output: { type: "string", alias: "o", description: "output format: text (default) or json" },
    client: { type: "boolean", description: "print only the client version (no cluster access)" },
    namespace: { type: "string", default: "liqo", description: "namespace liqo is installed in" },
    kubeconfig: { type: "string", description: "path to the kubeconfig (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "kubeconfig context to use" },
  },
  async run({ args }) {
    const output = args.output ?? "text";
    if (output !== "text" && output !== "json") throw new CliError(`--output ${output}: use text or json`);
    // The same output as cli/version.ts's fast path for `version --client` (cli/main.ts).
    const server = args.client
      ? undefined
      : await serverVersion({ kubeconfig: args.kubeconfig, context: args.context, namespace: args.namespace });
    if (output === "json") {
      console.log(JSON.stringify({ client: clientVersion(), ...(server ? { server } : {}) }, null, 2));
      return;
    }
    console.log(clientVersionOutput("text"));
    if (!server) return;
    if (!server.installed)
      console.log(`Server version: not installed (no liqo in namespace ${args.namespace}; liqoctl install --help)`);
    else
      console.log(
        `Server version: ${server.version} (cluster ${server.clusterName ?? "?"}, id ${server.clusterId ?? "?"})`,
      );
  },
});
