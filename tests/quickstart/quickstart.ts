// Liqo's quick start, locally: two rig clusters (rome and milan), liqo installed on both with
// liqoctl and the chart (its in-cluster Deployments scaled to zero), liqo's roles started as local
// processes under the chart's ServiceAccounts, milan's resources offered to rome as the virtual
// node liqo-milan, the liqo-demo namespace offloaded with liqoctl, and the hello-world app with
// one pod on the virtual node.
//
// Peering is Liqo's out-of-band flow: `liqoctl generate peer-command` on milan, the printed command
// run on rome; rome's controller manager then authenticates, negotiates and runs the virtual
// kubelet for liqo-milan in-process.
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { freePort } from "../rig/ports.ts";
import { RigError } from "../rig/errors.ts";
import { rigUp, type Rig } from "../rig/rig.ts";
import { findHelm } from "../../cli/install/helm.ts";
import {
  authTls,
  clusterCa,
  installLiqo,
  kubeletTls,
  liqoctl,
  LIQO_NAMESPACE,
  peerOutOfBand,
  run,
  runQuickstartMain,
  webhookTls,
  type InstalledCluster,
} from "./install.ts";
import { startRole } from "./roles.ts";

export interface QuickstartOptions {
  dir?: string;
  owner?: number;
  progress?: (message: string) => void;
}

export interface Quickstart {
  rig: Rig;
  rome: KubeClient;
  milan: KubeClient;
  kubectl: string;
  kubeconfig: (cluster: string) => string;
  /** What liqoctl install left on each cluster for the local roles (their ServiceAccount kubeconfigs). */
  installed: Record<"rome" | "milan", InstalledCluster>;
}

export async function runQuickstart(options: QuickstartOptions = {}): Promise<Quickstart> {
  const say = options.progress ?? (() => {});
  say("starting two clusters, rome and milan");
  const rig = await rigUp({
    clusters: 2,
    names: ["rome", "milan"],
    nodes: 2,
    dir: options.dir,
    owner: options.owner,
    progress: say,
  });
  const [romeC, milanC] = rig.clusters as [Rig["clusters"][0], Rig["clusters"][0]];
  const rome = createKubeClient({ kubeconfig: romeC.kubeconfig });
  const milan = createKubeClient({ kubeconfig: milanC.kubeconfig });
  const kubectl = join(rig.bin, "kubectl");
  const kubeconfig = (c: string) => join(rig.kubeconfigDir, `${c}.kubeconfig`);

  // The ports the local roles will listen on are chosen first: the chart registers the webhook's URL.
  const authPort = await freePort();
  const webhookPort = await freePort();
  say(
    "installing liqo with liqoctl install generic (Helm, the chart with roles.runInCluster=false: CRDs, RBAC, ServiceAccounts, certificates, identity, webhook configuration)",
  );
  const [romeI, milanI] = await Promise.all([
    installLiqo(rig, romeC, rome, {
      labels: "topology.liqo.io/region=center",
      webhookUrl: `https://127.0.0.1:${webhookPort}`,
    }),
    installLiqo(rig, milanC, milan, { labels: "topology.liqo.io/region=north" }),
  ]);

  // Each process runs as its role's ServiceAccount (a token from the TokenRequest API), with the
  // serving certificates the chart generated (their SANs include 127.0.0.1).
  say(
    "starting liqo's roles as local processes under the chart's ServiceAccounts: milan's auth service and controller manager, rome's controller manager and webhook",
  );
  const [authCert, kubeletCert, webhookCert, romeCa] = await Promise.all([
    authTls(milan, milanI),
    kubeletTls(rome, romeI),
    webhookTls(rome, romeI),
    clusterCa(rome, romeI),
  ]);
  await startRole(rig, "milan/auth", [
    "auth",
    `--kubeconfig=${milanI.kubeconfigs.auth}`,
    `--tls-cert-file=${authCert.cert}`,
    `--tls-key-file=${authCert.key}`,
    `--address=127.0.0.1:${authPort}`,
    `--advertise-url=https://127.0.0.1:${authPort}`,
  ]);
  await startRole(rig, "milan/controller-manager", [
    "controller-manager",
    `--kubeconfig=${milanI.kubeconfigs["controller-manager"]}`,
    `--cluster-id=${milanI.identity.clusterId}`,
    `--cluster-name=${milanI.identity.clusterName}`,
    "--controllers=shadowpod,resourcerequest",
  ]);
  await startRole(rig, "rome/controller-manager", [
    "controller-manager",
    `--kubeconfig=${romeI.kubeconfigs["controller-manager"]}`,
    `--cluster-id=${romeI.identity.clusterId}`,
    `--cluster-name=${romeI.identity.clusterName}`,
    "--controllers=namespaceoffloading,foreigncluster",
    "--kubelet-address=127.0.0.1",
    `--kubelet-cert-file=${kubeletCert.cert}`,
    `--kubelet-key-file=${kubeletCert.key}`,
    `--kubelet-client-ca-file=${romeCa}`,
  ]);
  // No --ca-file: the chart registered the webhook (at roles.external.webhookUrl), not the process.
  await startRole(rig, "rome/webhook", [
    "webhook",
    `--kubeconfig=${romeI.kubeconfigs.webhook}`,
    `--tls-cert-file=${webhookCert.cert}`,
    `--tls-key-file=${webhookCert.key}`,
    `--address=127.0.0.1:${webhookPort}`,
  ]);

  say("peering: liqoctl generate peer-command on milan, the printed command run on rome");
  // kwok nodes run no containers and the roles run as processes: no network fabric to set up.
  await peerOutOfBand(romeC, milanC, say, ["--no-networking"]);

  say("offloading namespace liqo-demo: liqoctl offload namespace liqo-demo");
  await rome.create(Resources.namespaces, { metadata: { name: "liqo-demo" } });
  await run(
    [...liqoctl, "offload", "namespace", "liqo-demo", `--kubeconfig=${romeC.kubeconfig}`],
    "liqoctl offload namespace liqo-demo",
  );

  say("deploying the hello-world app");
  await run(
    [
      kubectl,
      `--kubeconfig=${romeC.kubeconfig}`,
      "apply",
      "-n",
      "liqo-demo",
      "-f",
      join(import.meta.dir, "hello-world.yaml"),
    ],
    "kubectl apply hello-world",
  );
  const deadline = Date.now() + 180_000;
  while (true) {
    const pods = (
      await rome.list<KubeObject & { status?: { phase?: string } }>(Resources.pods, { namespace: "liqo-demo" })
    ).items;
    if (pods.length === 2 && pods.every((p) => p.status?.phase === "Running")) break;
    if (Date.now() > deadline)
      throw new RigError(
        `the hello-world pods did not run within 180s: ${pods.map((p) => `${p.metadata.name}=${p.status?.phase}`).join(", ")}; see the logs in ${join(rig.dir, "logs")}`,
      );
    await Bun.sleep(500);
  }
  return { rig, rome, milan, kubectl, kubeconfig, installed: { rome: romeI, milan: milanI } };
}

export async function show(q: Quickstart): Promise<string> {
  const k = (cluster: string, ...args: string[]) =>
    run([q.kubectl, `--kubeconfig=${q.kubeconfig(cluster)}`, ...args], `kubectl ${args.join(" ")}`);
  const helm = (cluster: string) =>
    run([findHelm(), "list", "-n", LIQO_NAMESPACE, `--kubeconfig=${q.kubeconfig(cluster)}`], "helm list");
  const sections = [
    ["$ helm list -n liqo   (rome)", await helm("rome")],
    ["$ helm list -n liqo   (milan)", await helm("milan")],
    ["$ kubectl get foreignclusters   (rome)", await k("rome", "get", "foreignclusters")],
    ["$ kubectl get nodes   (rome)", await k("rome", "get", "nodes")],
    [
      "$ kubectl get pods -n liqo-demo -o wide   (rome)",
      await k("rome", "get", "pods", "-n", "liqo-demo", "-o", "wide"),
    ],
    [
      "$ kubectl get namespaceoffloading -n liqo-demo   (rome)",
      await k("rome", "get", "namespaceoffloading", "-n", "liqo-demo"),
    ],
    [
      "$ kubectl get pods -A -l liqo.io/managed-by=shadowpod -o wide   (milan)",
      await k("milan", "get", "pods", "-A", "-l", "liqo.io/managed-by=shadowpod", "-o", "wide"),
    ],
  ];
  return sections.map(([h, body]) => `${h}\n${body}`).join("\n");
}

if (import.meta.main) {
  await runQuickstartMain(async (say) => {
    const q = await runQuickstart({ progress: say });
    return async (seconds) =>
      [
        `\nQuick start done in ${seconds.toFixed(0)}s.\n`,
        await show(q),
        `Try: kubectl --kubeconfig ${q.kubeconfig("rome")} logs -n liqo-demo nginx-remote`,
        `Logs of liqo's processes: ${join(q.rig.dir, "logs")}`,
      ].join("\n");
  });
}
