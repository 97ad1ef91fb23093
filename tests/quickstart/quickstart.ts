// Liqo's quick start, locally: two rig clusters (rome and milan), liqo's roles started as local
// processes, milan's resources offered to rome as the virtual node liqo-milan, the liqo-demo
// namespace offloaded with liqoctl, and the hello-world app with one pod on the virtual node.
//
// Peering (issue 5) is not wired yet: the virtual kubelet gets milan's kubeconfig as a flag and
// the ForeignCluster is written as a static peering, labelled as such.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ForeignClusterResource, installCrds } from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { tenantNamespaceName } from "../../core/offloading/index.ts";
import { ensureClusterIdentity } from "../../core/peering/identity.ts";
import { freePort } from "../rig/ports.ts";
import { serverExt, sign } from "../rig/pki.ts";
import { RigError } from "../rig/errors.ts";
import { rigUp, type Rig } from "../rig/rig.ts";
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
}

async function run(cmd: string[], what: string): Promise<string> {
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if ((await proc.exited) !== 0) throw new RigError(`${what} failed (exit ${proc.exitCode}):\n${err || out}`);
  return out + err;
}

export async function runQuickstart(options: QuickstartOptions = {}): Promise<Quickstart> {
  const say = options.progress ?? (() => {});
  say("starting two clusters, rome and milan");
  const rig = await rigUp({ clusters: 2, names: ["rome", "milan"], nodes: 2, dir: options.dir, owner: options.owner, progress: say });
  const [romeC, milanC] = rig.clusters as [Rig["clusters"][0], Rig["clusters"][0]];
  const rome = createKubeClient({ kubeconfig: romeC.kubeconfig });
  const milan = createKubeClient({ kubeconfig: milanC.kubeconfig });
  const kubectl = join(rig.bin, "kubectl");
  const kubeconfig = (c: string) => join(rig.kubeconfigDir, `${c}.kubeconfig`);

  say("installing liqo: CRDs and cluster identities");
  await Promise.all([installCrds(rome), installCrds(milan)]);
  const romeId = await ensureClusterIdentity(rome, { clusterName: "rome", clusterLabels: { "topology.liqo.io/region": "center" } });
  const milanId = await ensureClusterIdentity(milan, { clusterName: "milan", clusterLabels: { "topology.liqo.io/region": "north" } });

  say("peering rome with milan (static: milan's kubeconfig handed to the virtual kubelet)");
  const remote = { clusterID: milanId.clusterId, clusterName: milanId.clusterName };
  const tenant = tenantNamespaceName(remote);
  await rome.create(Resources.namespaces, { metadata: { name: tenant, labels: { "discovery.liqo.io/cluster-id": remote.clusterID, "discovery.liqo.io/tenant-namespace": "true" } } });
  await rome.create(ForeignClusterResource, {
    apiVersion: "discovery.liqo.io/v1alpha1", kind: "ForeignCluster", metadata: { name: remote.clusterName, labels: { "discovery.liqo.io/cluster-id": remote.clusterID } },
    spec: { clusterIdentity: remote, foreignAuthUrl: milanC.server, outgoingPeeringEnabled: "Yes", incomingPeeringEnabled: "No", networkingEnabled: "No" },
  });
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const cond = (type: string, status: string, message: string) => ({ type, status, lastTransitionTime: now, reason: "StaticPeering", message });
  await rome.mergePatch(ForeignClusterResource, remote.clusterName, undefined, {
    status: {
      tenantNamespace: { local: tenant, remote: "" },
      peeringConditions: [
        cond("OutgoingPeering", "Established", "virtual kubelet started with the remote kubeconfig (static peering until liqoctl peer lands)"),
        cond("IncomingPeering", "None", "not requested"),
        cond("NetworkStatus", "None", "networking disabled"),
        cond("AuthenticationStatus", "Established", "administrator-provided kubeconfig"),
      ],
    },
  }, "status");

  // Certificates for the kubelet API and the webhook, from rome's CA, for 127.0.0.1.
  const certs = join(rig.dir, "liqo-certs");
  mkdirSync(certs, { recursive: true });
  const kubeletCert = sign(certs, romeC.pki.ca, "virtual-kubelet", "/CN=liqo-milan", serverExt(["IP:127.0.0.1"]));
  const webhookCert = sign(certs, romeC.pki.ca, "webhook", "/CN=liqo-webhook", serverExt(["IP:127.0.0.1"]));

  say("starting liqo's roles as local processes");
  await startRole(rig, "milan/controller-manager", ["controller-manager", `--kubeconfig=${milanC.kubeconfig}`, `--cluster-id=${milanId.clusterId}`, "--cluster-name=milan", "--controllers=shadowpod"]);
  await startRole(rig, "rome/controller-manager", ["controller-manager", `--kubeconfig=${romeC.kubeconfig}`, `--cluster-id=${romeId.clusterId}`, "--cluster-name=rome", "--controllers=namespaceoffloading"]);
  const webhookPort = await freePort();
  await startRole(rig, "rome/webhook", ["webhook", `--kubeconfig=${romeC.kubeconfig}`, `--tls-cert-file=${webhookCert.cert}`, `--tls-key-file=${webhookCert.key}`,
    `--ca-file=${romeC.pki.ca.cert}`, `--address=127.0.0.1:${webhookPort}`, `--register-url=https://127.0.0.1:${webhookPort}`]);
  const kubeletPort = await freePort();
  await startRole(rig, "rome/virtual-kubelet-milan", ["virtual-kubelet", `--kubeconfig=${romeC.kubeconfig}`, `--remote-kubeconfig=${milanC.kubeconfig}`,
    `--cluster-id=${romeId.clusterId}`, `--remote-cluster-id=${milanId.clusterId}`, "--remote-cluster-name=milan", "--remote-cluster-labels=topology.liqo.io/region=north",
    "--resources=cpu=4,memory=8Gi,pods=110", `--kubelet-address=127.0.0.1:${kubeletPort}`, `--kubelet-cert=${kubeletCert.cert}`, `--kubelet-key=${kubeletCert.key}`,
    `--client-ca=${romeC.pki.ca.cert}`]);

  say("offloading namespace liqo-demo: liqoctl offload namespace liqo-demo");
  await rome.create(Resources.namespaces, { metadata: { name: "liqo-demo" } });
  await run([process.execPath, join(import.meta.dir, "../../cli/main.ts"), "offload", "namespace", "liqo-demo", `--kubeconfig=${romeC.kubeconfig}`], "liqoctl offload namespace liqo-demo");

  say("deploying the hello-world app");
  await run([kubectl, `--kubeconfig=${romeC.kubeconfig}`, "apply", "-n", "liqo-demo", "-f", join(import.meta.dir, "hello-world.yaml")], "kubectl apply hello-world");
  const deadline = Date.now() + 180_000;
  while (true) {
    const pods = (await rome.list<KubeObject & { status?: { phase?: string } }>(Resources.pods, { namespace: "liqo-demo" })).items;
    if (pods.length === 2 && pods.every((p) => p.status?.phase === "Running")) break;
    if (Date.now() > deadline) throw new RigError(`the hello-world pods did not run within 180s: ${pods.map((p) => `${p.metadata.name}=${p.status?.phase}`).join(", ")}; see the logs in ${join(rig.dir, "logs")}`);
    await Bun.sleep(500);
  }
  return { rig, rome, milan, kubectl, kubeconfig };
}

export async function show(q: Quickstart): Promise<string> {
  const k = (cluster: string, ...args: string[]) => run([q.kubectl, `--kubeconfig=${q.kubeconfig(cluster)}`, ...args], `kubectl ${args.join(" ")}`);
  const sections = [
    ["$ kubectl get foreignclusters   (rome)", await k("rome", "get", "foreignclusters")],
    ["$ kubectl get nodes   (rome)", await k("rome", "get", "nodes")],
    ["$ kubectl get pods -n liqo-demo -o wide   (rome)", await k("rome", "get", "pods", "-n", "liqo-demo", "-o", "wide")],
    ["$ kubectl get namespaceoffloading -n liqo-demo   (rome)", await k("rome", "get", "namespaceoffloading", "-n", "liqo-demo")],
    ["$ kubectl get pods -A -l liqo.io/managed-by=shadowpod -o wide   (milan)", await k("milan", "get", "pods", "-A", "-l", "liqo.io/managed-by=shadowpod", "-o", "wide")],
  ];
  return sections.map(([h, body]) => `${h}\n${body}`).join("\n");
}

if (import.meta.main) {
  const started = performance.now();
  const stamp = () => new Date().toISOString().slice(11, 19);
  try {
    const q = await runQuickstart({ progress: (m) => console.error(`${stamp()} INFO  ${m}`) });
    console.log(`\nQuick start done in ${((performance.now() - started) / 1000).toFixed(0)}s.\n`);
    console.log(await show(q));
    console.log(`Try: kubectl --kubeconfig ${q.kubeconfig("rome")} logs -n liqo-demo nginx-remote`);
    console.log(`Logs of liqo's processes: ${join(q.rig.dir, "logs")}`);
    console.log(`Tear everything down with: bun run rig down   (or node_modules/.bin/bun run rig down)`);
    process.exit(0);
  } catch (err) {
    console.error(`ERROR ${(err as Error).message}`);
    console.error("Clean up with: bun run rig down");
    process.exit(1);
  }
}
