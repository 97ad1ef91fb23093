// liqoctl uninstall [--purge]: refuses while peerings or offloaded namespaces exist (removing liqo
// under them would strand remote workloads), then lets Helm remove the release; --purge also
// removes the CRDs, liqo's namespaces and the cluster-wide objects liqo created at run time.
import { defineCommand } from "citty";
import { createKubeClient } from "../../core/kube/client.ts";
import { CliError, ExitCode } from "../errors.ts";
import { findHelm, helmError, releaseStatus, runHelm } from "../install/helm.ts";
import { unconfigureClusterDns } from "../install/coredns.ts";
import { liqoLeftovers, purgeLiqo, uninstallBlockers } from "../install/purge.ts";
import { info, parseDuration, spinner, warn } from "../ui.ts";
import { RELEASE } from "./install.ts";

export default defineCommand({
  meta: { name: "uninstall", description: "Uninstall liqo (refused while peerings or offloaded namespaces exist)" },
  args: {
    purge: {
      type: "boolean",
      description: "also remove the CRDs (and every liqo object), liqo's namespaces and the cluster identity",
    },
    timeout: { type: "string", default: "10m", description: "how long to wait for the removal" },
    verbose: { type: "boolean", alias: "v", description: "print Helm's output" },
    namespace: { type: "string", alias: "n", default: "liqo", description: "namespace liqo is installed in" },
    kubeconfig: { type: "string", description: "path to the kubeconfig (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "kubeconfig context to use" },
  },
  async run({ args }) {
    let timeoutMs: number;
    try {
      timeoutMs = parseDuration(args.timeout, "timeout");
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const target = { kubeconfig: args.kubeconfig, context: args.context, namespace: args.namespace };
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const blockers = await uninstallBlockers(client);
    if (blockers.length) {
      throw new CliError(
        `liqo cannot be uninstalled while it is in use:\n  ${blockers.join("\n  ")}\nthen run liqoctl uninstall again`,
        ExitCode.Failure,
      );
    }
    const helm = findHelm();
    // Before the release goes: CoreDNS stops forwarding to a Service that is about to disappear.
    try {
      const undone = await unconfigureClusterDns(client);
      if (undone) info(undone);
    } catch (err) {
      warn(
        `the clusterset.local block could not be removed from ConfigMap kube-system/coredns (${(err as Error).message}): remove the lines between its "# BEGIN liqo clusterset.local" and "# END liqo clusterset.local" markers by hand`,
      );
    }
    if (await releaseStatus(helm, RELEASE, target)) {
      const spin = spinner(`Uninstalling liqo from namespace ${args.namespace}`);
      const r = await runHelm(
        helm,
        ["uninstall", RELEASE, "--wait", "--timeout", `${Math.ceil(timeoutMs / 1000)}s`],
        target,
        { verbose: args.verbose },
      );
      if (r.code !== 0) {
        spin.fail("liqo could not be uninstalled");
        throw new CliError(`helm: ${helmError(r)}`, ExitCode.Failure);
      }
      spin.succeed(`liqo uninstalled from namespace ${args.namespace}`);
    } else {
      info(
        `no liqo release in namespace ${args.namespace}${args.purge ? "; purging what is left" : "; nothing to do"}`,
      );
    }
    if (!args.purge) {
      info(
        `the cluster identity and CA are kept in namespace ${args.namespace} for a reinstall; liqoctl uninstall --purge removes them and the CRDs`,
      );
      return;
    }
    const spin = spinner("Purging liqo's CRDs, namespaces and cluster-wide objects");
    const deleted = await purgeLiqo(client, args.namespace);
    const deadline = Date.now() + timeoutMs;
    let left = await liqoLeftovers(client, args.namespace);
    while (left.length && Date.now() < deadline) {
      await Bun.sleep(500); // poll: namespaces finalize their content asynchronously
      left = await liqoLeftovers(client, args.namespace);
    }
    if (left.length) {
      spin.fail(`still present after ${args.timeout}: ${left.join(", ")}`);
      throw new CliError(`purge incomplete; check finalizers with kubectl get ${left[0]} -o yaml`, ExitCode.Failure);
    }
    spin.succeed(`liqo purged (${deleted.length} objects deleted)`);
  },
});
