// liqoctl unoffload namespace <ns>: deletes the NamespaceOffloading and waits until it is gone,
// i.e. until the twin namespaces (and everything reflected into them) are removed.
import { defineCommand } from "citty";
import { DEFAULT_NAMESPACE_OFFLOADING_NAME, NamespaceOffloadingResource } from "../../core/apis/index.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { CliError, ExitCode } from "../errors.ts";
import { dataLossWarning, listVolumes, remoteBackedClaims } from "../storage-guard.ts";
import { info, parseDuration, spinner, warn } from "../ui.ts";

const unoffloadNamespace = defineCommand({
  meta: {
    name: "namespace",
    alias: "ns",
    description: "Stop offloading a namespace: remote twin namespaces and reflected resources are deleted",
  },
  args: {
    name: { type: "positional", required: true, description: "the namespace to unoffload" },
    timeout: {
      type: "string",
      default: "120s",
      description: "how long to wait for the remote namespaces to be removed",
    },
    yes: {
      type: "boolean",
      default: false,
      description: "confirm deleting the data of the namespace's liqo-class volumes that live in peers",
    },
    kubeconfig: { type: "string", description: "path to the kubeconfig" },
    context: { type: "string", description: "kubeconfig context to use" },
  },
  async run({ args }) {
    let timeoutMs: number;
    try {
      timeoutMs = parseDuration(args.timeout, "timeout");
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const loss = dataLossWarning(
      remoteBackedClaims(await listVolumes(client, warn), { namespace: args.name }),
      `unoffloading namespace ${args.name}`,
    );
    if (loss && !args.yes) throw new CliError(loss);
    const deleted = await client.delete(NamespaceOffloadingResource, DEFAULT_NAMESPACE_OFFLOADING_NAME, args.name);
    if (!deleted) {
      info(`namespace ${args.name} is not offloaded; nothing to do`);
      return;
    }
    const spin = spinner(`Waiting for the unoffloading of namespace ${args.name} to complete`);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!(await client.find(NamespaceOffloadingResource, DEFAULT_NAMESPACE_OFFLOADING_NAME, args.name))) {
        spin.succeed(`Unoffloading of namespace ${args.name} completed`);
        return;
      }
      await Bun.sleep(500);
    }
    spin.fail(
      `namespace ${args.name} is still being unoffloaded after ${args.timeout}: check kubectl get namespaceoffloading -n ${args.name} -o yaml, and that the liqo controller-manager runs`,
    );
    process.exitCode = ExitCode.Failure;
  },
});

export default defineCommand({
  meta: { name: "unoffload", description: "Stop offloading resources to peered clusters" },
  subCommands: { namespace: unoffloadNamespace },
});
