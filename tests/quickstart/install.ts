// Installing liqo for the quick start: the chart applied with `liqoctl install generic` (Helm), its
// Deployments scaled to zero (roles.runInCluster=false) because the roles run as local processes;
// then what those processes need from the install: per-role ServiceAccount kubeconfigs and the
// chart's certificates (which carry 127.0.0.1, where the processes listen).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { readClusterIdentity, type LocalClusterIdentity } from "../../core/peering/identity.ts";
import { RigError } from "../rig/errors.ts";
import type { Rig } from "../rig/rig.ts";
import { clusterCaFile, secretFiles, serviceAccountKubeconfig } from "./credentials.ts";
import { waitFor } from "../support/wait.ts";

export const LIQO_NAMESPACE = "liqo";
type RigCluster = Rig["clusters"][number];

export interface InstalledCluster {
  identity: LocalClusterIdentity;
  /** Kubeconfig of each role's ServiceAccount (liqo-<role>), by role. */
  kubeconfigs: Record<string, string>;
  dir: string;
}

export async function run(cmd: string[], what: string): Promise<string> {
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if ((await proc.exited) !== 0) throw new RigError(`${what} failed (exit ${proc.exitCode}):\n${err || out}`);
  return out + err;
}

export const liqoctl = [process.execPath, join(import.meta.dir, "../../cli/main.ts")];

/**
 * `liqoctl install generic` with the chart's out-of-cluster switch. webhookUrl: where the API
 * server calls this cluster's pod webhook (only the cluster that offloads runs one).
 */
export async function installLiqo(
  rig: Rig,
  c: RigCluster,
  client: KubeClient,
  o: { labels: string; webhookUrl?: string },
): Promise<InstalledCluster> {
  const sets = [
    "roles.runInCluster=false",
    "roles.external.ips={127.0.0.1}",
    ...(o.webhookUrl ? [`roles.external.webhookUrl=${o.webhookUrl}`] : []),
  ];
  await run(
    [
      ...liqoctl,
      "install",
      "generic",
      `--kubeconfig=${c.kubeconfig}`,
      `--cluster-name=${c.name}`,
      `--cluster-labels=${o.labels}`,
      `--pod-cidr=${c.podCIDR}`,
      `--service-cidr=${c.serviceCIDR}`,
      "--timeout=5m",
      ...sets.flatMap((s) => ["--set", s]),
    ],
    `liqoctl install generic (${c.name})`,
  );
  const identity = await readClusterIdentity(client, LIQO_NAMESPACE);
  if (!identity)
    throw new RigError(
      `the chart installed no cluster identity on ${c.name} (ConfigMap ${LIQO_NAMESPACE}/liqo-clusterid-configmap)`,
    );
  const dir = join(rig.dir, "liqo", c.name);
  mkdirSync(dir, { recursive: true });
  const kubeconfigs: Record<string, string> = {};
  for (const role of ["auth", "controller-manager", "webhook"]) {
    kubeconfigs[role] = await serviceAccountKubeconfig(client, c.kubeconfig, {
      namespace: LIQO_NAMESPACE,
      serviceAccount: `liqo-${role}`,
      out: join(dir, `${role}.kubeconfig`),
    });
  }
  return { identity, kubeconfigs, dir };
}

export const authTls = (client: KubeClient, i: InstalledCluster) =>
  secretFiles(client, LIQO_NAMESPACE, "liqo-auth-tls", i.dir);
export const webhookTls = (client: KubeClient, i: InstalledCluster) =>
  secretFiles(client, LIQO_NAMESPACE, "liqo-webhook-tls", i.dir);
export const kubeletTls = (client: KubeClient, i: InstalledCluster) =>
  secretFiles(client, LIQO_NAMESPACE, "liqo-virtual-kubelet-tls", i.dir);

/** The cluster CA (kube-root-ca.crt is published into new namespaces shortly after they appear). */
export async function clusterCa(client: KubeClient, i: InstalledCluster): Promise<string> {
  let last: unknown;
  return waitFor(
    `kube-root-ca.crt in namespace ${LIQO_NAMESPACE}`,
    async () => {
      try {
        return await clusterCaFile(client, LIQO_NAMESPACE, join(i.dir, "cluster-ca.crt"));
      } catch (err) {
        last = err;
        return false;
      }
    },
    { timeoutMs: 60_000, intervalMs: 250, describe: () => String((last as Error)?.message ?? last) },
  );
}

/** Liqo's out-of-band flow: `liqoctl generate peer-command` on the provider, the printed command run on the consumer. */
export async function peerOutOfBand(
  consumer: RigCluster,
  provider: RigCluster,
  say: (m: string) => void,
  extra: string[] = [],
  program: string[] = liqoctl,
): Promise<void> {
  const printed = await run(
    [...program, "generate", "peer-command", "--only-command", `--kubeconfig=${provider.kubeconfig}`],
    `liqoctl generate peer-command (${provider.name})`,
  );
  const generated = printed
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l.startsWith("liqoctl peer out-of-band "));
  if (!generated) throw new RigError(`liqoctl generate peer-command printed no peer command: ${printed}`);
  const words = generated.split(/\s+/);
  say(`$ ${words.map((w, i) => (words[i - 1] === "--auth-token" ? "<token>" : w)).join(" ")}`);
  await run(
    [...program, ...words.slice(1), ...extra, `--kubeconfig=${consumer.kubeconfig}`, "--timeout=600s"],
    `liqoctl peer out-of-band ${provider.name} (${consumer.name})`,
  );
}

/**
 * A quick start as a command: progress lines on stderr, the summary `report` writes (given the
 * seconds elapsed) on stdout, exit 0; or the error and how to clean up, exit 1.
 */
export async function runQuickstartMain(
  body: (say: (m: string) => void) => Promise<(seconds: number) => Promise<string>>,
): Promise<never> {
  const started = performance.now();
  const stamp = () => new Date().toISOString().slice(11, 19);
  try {
    const report = await body((m) => console.error(`${stamp()} INFO  ${m}`));
    console.log(await report((performance.now() - started) / 1000));
    console.log("Tear everything down with: bun run rig down   (or node_modules/.bin/bun run rig down)");
    process.exit(0);
  } catch (err) {
    console.error(`ERROR ${(err as Error).message}`);
    console.error("Clean up with: bun run rig down");
    process.exit(1);
  }
}
