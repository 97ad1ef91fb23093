// Liqo's quick start as users run it: two rig clusters with real nodes (rome and milan), liqo
// installed in-cluster on both with `liqoctl install` (every role a pod of the project's image),
// rome peered with milan out-of-band with networking (WireGuard gateways, VXLAN overlay), the
// liqo-demo namespace offloaded, the hello-world app with one pod on a physical node and one on the
// virtual node, and then real traffic: from a pod in rome, curl to nginx-remote's pod address and
// to the liqo-demo Service by DNS name, answered by the container running in milan.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, rigUp, type Rig } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { liqoctl, peerOutOfBand, run, runQuickstartMain } from "./install.ts";

type RigCluster = Rig["clusters"][number];
type PodObject = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string; podIP?: string } };

export interface InClusterOptions {
  dir?: string;
  owner?: number;
  overlappingPodCidrs?: boolean;
  realNodes?: number;
  /** liqoctl install --enable-ha: two gateway and controller manager replicas (active/standby). */
  ha?: boolean;
  /** liqoctl install --sharing-percentage (default 30, Liqo's): how much of milan rome's virtual node offers. */
  sharingPercentage?: number;
  /** More liqoctl install flags for rome (e.g. --reflection-policy=...). */
  romeInstallArgs?: string[];
  /** More liqoctl install flags for milan (e.g. --set reflection.grantPeerPlugins=true). */
  milanInstallArgs?: string[];
  progress?: (message: string) => void;
  /** The liqoctl that installs, peers and offloads (default: this checkout's); e.g. a previous release's. */
  liqoctl?: string[];
  /** More images for the nodes (a previous release's liqo image). */
  extraImages?: { ref: string; archive: string }[];
}

export interface InClusterQuickstart {
  rig: Rig;
  rome: KubeClient;
  milan: KubeClient;
  kubectl: string;
  kubeconfig: (cluster: string) => string;
  /** Seconds spent in each step, for the report. */
  timings: Record<string, number>;
}

/** `liqoctl install generic` as a user runs it on a cluster whose API server is on the rig bridge. */
export async function installInCluster(
  rig: Rig,
  c: RigCluster,
  labels: string,
  o: { ha?: boolean; sharingPercentage?: number; extraArgs?: string[]; liqoctl?: string[] } = {},
): Promise<void> {
  const apiServer = `https://${rig.network!.gateway}:${c.ports.apiserver}`;
  await run(
    [
      ...(o.liqoctl ?? liqoctl),
      "install",
      "generic",
      `--kubeconfig=${c.kubeconfig}`,
      `--cluster-name=${c.name}`,
      `--cluster-labels=${labels}`,
      `--api-server-url=${apiServer}`,
      `--pod-cidr=${c.podCIDR}`,
      `--service-cidr=${c.serviceCIDR}`,
      // The nodes' own network must never be handed out to remap a peer's pods.
      `--reserved-subnets=${rig.network!.prefix}.0/24`,
      "--timeout=10m",
      ...(o.ha ? ["--enable-ha"] : []),
      ...(o.sharingPercentage === undefined ? [] : [`--sharing-percentage=${o.sharingPercentage}`]),
      ...(o.extraArgs ?? []),
    ],
    `liqoctl install generic (${c.name})`,
  );
}

export async function runInClusterQuickstart(o: InClusterOptions = {}): Promise<InClusterQuickstart> {
  const say = o.progress ?? (() => {});
  const timings: Record<string, number> = {};
  let mark = performance.now();
  const lap = (name: string) => {
    const now = performance.now();
    timings[name] = (now - mark) / 1000;
    mark = now;
  };

  say("starting two clusters with real nodes, rome and milan");
  const rig = await rigUp({
    clusters: 2,
    names: ["rome", "milan"],
    realNodes: o.realNodes ?? 2,
    overlappingPodCidrs: o.overlappingPodCidrs,
    dir: o.dir,
    owner: o.owner,
    progress: say,
    extraImages: o.extraImages,
  });
  lap("clusters");
  const [romeC, milanC] = rig.clusters as [RigCluster, RigCluster];
  const rome = createKubeClient({ kubeconfig: romeC.kubeconfig });
  const milan = createKubeClient({ kubeconfig: milanC.kubeconfig });
  const kubectl = join(rig.bin, "kubectl");
  const kubeconfig = (c: string) => join(rig.kubeconfigDir, `${c}.kubeconfig`);

  say(
    "installing liqo in-cluster on both with liqoctl install generic (Helm: every role a pod of ghcr.io/liqo-bun/liqo)",
  );
  await Promise.all([
    installInCluster(rig, romeC, "topology.liqo.io/region=center", { ...o, extraArgs: o.romeInstallArgs }),
    installInCluster(rig, milanC, "topology.liqo.io/region=north", { ...o, extraArgs: o.milanInstallArgs }),
  ]);
  lap("install");

  say("peering: liqoctl generate peer-command on milan, the printed command run on rome (networking on, as in Liqo)");
  await peerOutOfBand(romeC, milanC, say, [], o.liqoctl);
  lap("peering");

  say("offloading namespace liqo-demo: liqoctl offload namespace liqo-demo");
  await rome.create(Resources.namespaces, { metadata: { name: "liqo-demo" } });
  await run(
    [...(o.liqoctl ?? liqoctl), "offload", "namespace", "liqo-demo", `--kubeconfig=${romeC.kubeconfig}`],
    "liqoctl offload namespace liqo-demo",
  );

  say("deploying the hello-world app and a client pod to curl from");
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
  await rome.create(Resources.pods, clientPod());
  await waitFor(
    "the hello-world pods and the client Running",
    async () => {
      const pods = (await rome.list<PodObject>(Resources.pods, { namespace: "liqo-demo" })).items;
      return pods.length === 3 && pods.every((p) => p.status?.phase === "Running" && p.status.podIP) ? pods : undefined;
    },
    {
      timeoutMs: 300_000,
      describe: async () =>
        (await rome.list<PodObject>(Resources.pods, { namespace: "liqo-demo" })).items.map(
          (p) => `${p.metadata.name}=${p.status?.phase}`,
        ),
    },
  );
  lap("app");
  return { rig, rome, milan, kubectl, kubeconfig, timings };
}

/** A pod on a physical node of rome with curl, to reach the app from inside the cluster. */
/** A benchmark's own in-cluster quick start, under $TMPDIR/liqo-rig-bench, killed when the process exits. */
export async function benchQuickstart(): Promise<InClusterQuickstart> {
  const root = join(tmpdir(), "liqo-rig-bench");
  mkdirSync(root, { recursive: true });
  const q = await runInClusterQuickstart({
    dir: mkdtempSync(join(root, "rig-")),
    owner: process.pid,
    progress: (m) => console.error(`[bench] ${m}`),
  });
  process.on("exit", () => killRigNow(q.rig));
  return q;
}

export function clientPod(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "curl", namespace: "liqo-demo" },
    spec: {
      containers: [{ name: "curl", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }],
      affinity: virtualNodeAffinity("NotIn"),
    },
  } as KubeObject;
}

/** A pod's affinity for the virtual nodes (In: offloaded) or for the physical nodes (NotIn). */
export function virtualNodeAffinity(operator: "In" | "NotIn") {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: "liqo.io/type", operator, values: ["virtual-node"] }] }],
      },
    },
  };
}

/** Runs curl in rome's client pod; retries while the path is being set up, up to the deadline. */
export async function curlFromRome(
  q: InClusterQuickstart,
  url: string,
  expect: RegExp,
  timeoutMs = 120_000,
): Promise<string> {
  let last = "";
  return waitFor(
    `curl ${url} from rome's client pod answering ${expect}`,
    async () => {
      const proc = Bun.spawn(
        [
          q.kubectl,
          `--kubeconfig=${q.kubeconfig("rome")}`,
          "exec",
          "-n",
          "liqo-demo",
          "curl",
          "--",
          "curl",
          "-sS",
          "--max-time",
          "5",
          url,
        ],
        { stdout: "pipe", stderr: "pipe" },
      );
      const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      last = (out + err).trim();
      return (await proc.exited) === 0 && expect.test(out) ? out : undefined;
    },
    { timeoutMs, intervalMs: 1000, describe: () => last },
  );
}

export async function crossClusterAnswers(
  q: InClusterQuickstart,
): Promise<{ podUrl: string; byPod: string; serviceUrl: string; byService: string }> {
  const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
  const podUrl = `http://${remote.status!.podIP}/`;
  const byPod = await curlFromRome(q, podUrl, /Server name: nginx-remote/);
  // The Service balances over both pods: ask until the one in milan answers.
  const serviceUrl = "http://liqo-demo.liqo-demo.svc.cluster.local/";
  const byService = await curlFromRome(q, serviceUrl, /Server name: nginx-remote/);
  return { podUrl, byPod, serviceUrl, byService };
}

export async function showInCluster(q: InClusterQuickstart): Promise<string> {
  const k = (cluster: string, ...args: string[]) =>
    run([q.kubectl, `--kubeconfig=${q.kubeconfig(cluster)}`, ...args], `kubectl ${args.join(" ")}`);
  const answers = await crossClusterAnswers(q);
  const sections = [
    ["$ kubectl get pods -n liqo   (rome)", await k("rome", "get", "pods", "-n", "liqo", "-o", "wide")],
    ["$ kubectl get foreignclusters   (rome)", await k("rome", "get", "foreignclusters")],
    ["$ kubectl get nodes   (rome)", await k("rome", "get", "nodes")],
    [
      "$ kubectl get pods -n liqo-demo -o wide   (rome)",
      await k("rome", "get", "pods", "-n", "liqo-demo", "-o", "wide"),
    ],
    [
      "$ kubectl get pods -A -l liqo.io/managed-by=shadowpod -o wide   (milan)",
      await k("milan", "get", "pods", "-A", "-l", "liqo.io/managed-by=shadowpod", "-o", "wide"),
    ],
    [`$ kubectl exec -n liqo-demo curl -- curl -s ${answers.podUrl}   (rome → nginx-remote in milan)`, answers.byPod],
    [
      `$ kubectl exec -n liqo-demo curl -- curl -s ${answers.serviceUrl}   (rome → the Service, answered in milan)`,
      answers.byService,
    ],
  ];
  return sections.map(([h, body]) => `${h}\n${body}`).join("\n");
}

if (import.meta.main) {
  await runQuickstartMain(async (say) => {
    const q = await runInClusterQuickstart({ progress: say });
    const shown = await showInCluster(q);
    return async (seconds) =>
      [
        `\nQuick start done in ${seconds.toFixed(0)}s (${Object.entries(q.timings)
          .map(([k, v]) => `${k} ${v.toFixed(0)}s`)
          .join(", ")}).\n`,
        shown,
        `\nTry: kubectl --kubeconfig ${q.kubeconfig("rome")} exec -n liqo-demo curl -- curl -s http://liqo-demo.liqo-demo.svc.cluster.local/`,
      ].join("\n");
  });
}
