// The local-path provisioner as a process: `bun tests/rig/local-path-main.ts <kubeconfig> <root>`.
// The rig starts one per cluster with real nodes (cluster.ts) and stops it with the cluster.
import { createKubeClient } from "../../core/kube/client.ts";
import { runLocalPathProvisioner } from "./local-path.ts";

const [kubeconfig, root] = process.argv.slice(2);
if (!kubeconfig || !root) {
  console.error("usage: local-path-main.ts <kubeconfig> <volumes root>");
  process.exit(2);
}
const provisioner = runLocalPathProvisioner(createKubeClient({ kubeconfig }), root, (m) =>
  console.log(`${new Date().toISOString()} ${m}`),
);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => void provisioner.stop().finally(() => process.exit(0)));
}
