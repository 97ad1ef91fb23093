import { ServiceExportResource } from "../../core/apis/multicluster/serviceexport.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { benchQuickstart, virtualNodeAffinity } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { waitFor } from "../support/wait.ts";
import { percentile } from "./stats.ts";

const exportsToTime = Number(process.env.BENCH_MCS_EXPORTS ?? 10);
const requests = Number(process.env.BENCH_MCS_REQUESTS ?? 300);
const NS = "mcs-bench";
type PodObject = KubeObject & { status?: { phase?: string; podIP?: string } };

const pod = (name: string): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS, labels: { app: "echo" } },
    spec: {
      containers: [{ name: "echo", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }],
      affinity: virtualNodeAffinity("NotIn"),
      terminationGracePeriodSeconds: 1,
    },
  }) as KubeObject;
const service = (name: string): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: NS },
    spec: { selector: { app: "echo" }, ports: [{ name: "http", port: 80, targetPort: 80 }] },
  }) as KubeObject;
const serviceExport = (name: string): KubeObject => ({
  apiVersion: "multicluster.x-k8s.io/v1alpha1",
  kind: "ServiceExport",
  metadata: { name, namespace: NS },
});

const q = await benchQuickstart();
const inRome = (script: string) => kubectlOn(q, "rome", "exec", "-n", NS, "echo-rome", "--", "sh", "-c", script);
try {
  for (const [c, k] of [
    ["rome", q.rome],
    ["milan", q.milan],
  ] as const) {
    await k.create(Resources.namespaces, { metadata: { name: NS } });
    await k.create(Resources.pods, pod(`echo-${c}`));
    await k.create(Resources.services, service("web"));
    await k.create(ServiceExportResource, serviceExport("web"));
  }
  for (const [c, k] of [
    ["rome", q.rome],
    ["milan", q.milan],
  ] as const)
    await waitFor(
      `echo-${c} Running`,
      async () => (await k.find<PodObject>(Resources.pods, `echo-${c}`, NS))?.status?.phase === "Running",
      { timeoutMs: 180_000 },
    );

  // 1. Export → name resolves in the other cluster.
  const times: number[] = [];
  for (let i = 0; i < exportsToTime; i++) {
    const name = `t${i}`;
    await q.milan.create(Resources.services, service(name));
    const fqdn = `${name}.${NS}.svc.clusterset.local`;
    // The poller runs in the pod and prints the wall clock (ms) at the first answer; the pod's clock is the host's.
    const poll = inRome(
      `end=$(( $(date +%s) + 60 )); until getent hosts ${fqdn} >/dev/null; do [ $(date +%s) -gt $end ] && exit 1; sleep 0.1; done; date +%s%3N`,
    );
    await Bun.sleep(500);
    const created = Date.now();
    await q.milan.create(ServiceExportResource, serviceExport(name));
    const r = await poll;
    const at = Number(r.out.trim());
    if (r.code !== 0 || !at) console.log(`  export ${name}: not resolved within 60 s (${r.err.trim()})`);
    else times.push(at - created);
  }
  times.sort((a, b) => a - b);
  console.log(
    `ServiceExport in milan → name resolves in rome (${times.length}/${exportsToTime}): p50 ${percentile(times, 50)} ms, p99 ${percentile(times, 99)} ms, min ${times[0]} ms`,
  );

  // 2. Requests per second, a new connection each.
  const rate = async (host: string) => {
    const urls = Array.from({ length: requests }, () => `http://${host}/`).join(" ");
    const r = await inRome(
      `s=$(date +%s%N); curl -s -o /dev/null -H 'Connection: close' --max-time 5 ${urls}; e=$(date +%s%N); echo $(( (e-s)/1000000 ))`,
    );
    const ms = Number(r.out.trim().split("\n").at(-1));
    return (requests * 1000) / ms;
  };
  // Both clusters must answer before measuring: kube-proxy programs the imported endpoints a moment after the import.
  await waitFor(
    "both clusters answer web's clusterset name",
    async () => {
      const r = await inRome(
        `for i in $(seq 20); do curl -s --max-time 2 http://web.${NS}.svc.clusterset.local/ | grep -o 'Server name: [a-z-]*'; done`,
      );
      return r.out.includes("echo-rome") && r.out.includes("echo-milan");
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
  const local = await rate(`web.${NS}.svc.cluster.local`);
  const clusterset = await rate(`web.${NS}.svc.clusterset.local`);
  console.log(
    `requests/s from a pod in rome, ${requests} requests, a new connection each: local Service ${local.toFixed(0)}, clusterset Service (rome + milan) ${clusterset.toFixed(0)}, clusterset ÷ local ${(clusterset / local).toFixed(2)}`,
  );
} finally {
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
process.exit(0);
