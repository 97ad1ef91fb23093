// The chart in-cluster, as users run it: `liqoctl install generic` on a rig cluster with a real node
// (containerd, kubelet, kube-proxy in a network namespace), every role a pod of the project's image.
// Checked: every Deployment and the route DaemonSet Ready with that image; each pod runs as its
// chart ServiceAccount (the token mounted in the pod is the one RBAC judges); each role's pod
// deleted comes back Ready and working; `liqoctl uninstall --purge` leaves nothing of liqo.
// Printed, not asserted: install → all Ready time, and each pod's idle memory.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { findHelm, releaseStatus } from "../../cli/install/helm.ts";
import { ensureImages, importImages, rigImageRefs } from "../rig/images.ts";
import { podMemory as podMemoryOf } from "../rig/pod-memory.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { liqoctl, run } from "./liqoctl-run.ts";
import {
  ANONYMOUS_JOB,
  dashboardQueries,
  declaredName,
  deployPrometheus,
  LIQO_JOB,
  metricNames,
  prometheusTargets,
  queryPrometheus,
  registeredMetricNames,
  removePrometheus,
} from "./prometheus.ts";

const NS = "liqo";
const IMAGE = rigImageRefs.liqo;
const deployments = [
  "liqo-auth",
  "liqo-controller-manager",
  "liqo-gateway",
  "liqo-network-manager",
  "liqo-webhook",
  "liqo-proxy",
];
const workloads = [...deployments, "liqo-route"];
const daemonSets: ResourceRef = {
  group: "apps",
  version: "v1",
  kind: "DaemonSet",
  plural: "daemonsets",
  namespaced: true,
};
const admission = (kind: string, plural: string): ResourceRef => ({
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind,
  plural,
  namespaced: false,
});

type Pod = KubeObject & {
  spec: { serviceAccountName?: string; nodeName?: string; containers: { name: string; image: string }[] };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { ready: boolean; image: string; imageID: string; restartCount: number }[];
  };
};
type Workload = KubeObject & {
  spec: { replicas?: number; template: { spec: { containers: { image: string; args: string[] }[] } } };
  status?: {
    readyReplicas?: number;
    updatedReplicas?: number;
    numberReady?: number;
    desiredNumberScheduled?: number;
    observedGeneration?: number;
  };
};
type ProbedContainer = {
  readinessProbe?: { httpGet?: { port?: string | number } };
  livenessProbe?: { httpGet?: { port?: string | number } };
  ports?: { name?: string; containerPort: number }[];
};
type Service = KubeObject & { spec: { type: string; ports: { name?: string; nodePort?: number }[] } };

let rig: TestRig;
let client: KubeClient;
let kubeconfig: string;
let kubectl: string;
let apiServerUrl: string;
let nodeIp: string;
let nodeNetns: string;
const helm = findHelm();

const isReady = (p: Pod) =>
  p.status?.phase === "Running" &&
  !!p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") &&
  !p.metadata.deletionTimestamp;
const metricsPort = (p: Pod) =>
  (p.spec.containers[0] as unknown as ProbedContainer).ports?.find((x) => x.name === "metrics")?.containerPort;
const podsOf = async (workload: string) =>
  (await client.list<Pod>(Resources.pods, { namespace: NS, labelSelector: `app.kubernetes.io/name=${workload}` }))
    .items;
const k = (...args: string[]) => run([kubectl, "--kubeconfig", kubeconfig, ...args]);

async function workload(name: string): Promise<Workload | undefined> {
  return name === "liqo-route"
    ? client.find<Workload>(daemonSets, name, NS)
    : client.find<Workload>(Resources.deployments, name, NS);
}

/** Every liqo workload has all its pods Ready (and only those: no terminating leftovers); returns the pods. */
async function allReady(): Promise<Pod[] | false> {
  const pods = (await client.list<Pod>(Resources.pods, { namespace: NS })).items;
  for (const name of workloads) {
    const w = await workload(name);
    if (!w) return false;
    const want = name === "liqo-route" ? (w.status?.desiredNumberScheduled ?? 0) : (w.spec.replicas ?? 1);
    const mine = pods.filter((p) => p.metadata.labels?.["app.kubernetes.io/name"] === name);
    if (want < 1 || mine.length !== want || !mine.every(isReady)) return false;
  }
  return pods;
}

const podSummary = async () =>
  (await client.list<Pod>(Resources.pods, { namespace: NS })).items.map((p) => ({
    pod: p.metadata.name,
    phase: p.status?.phase,
    ready: isReady(p),
    restarts: p.status?.containerStatuses?.[0]?.restartCount,
  }));

/** What `helm get values liqo` answers: the values liqoctl generated and the --set flags given. */
async function releaseValuesOf(): Promise<Record<string, unknown>> {
  const r = await run([helm, "get", "values", "liqo", "-n", NS, "--kubeconfig", kubeconfig, "-o", "json"]);
  if (r.code !== 0) throw new Error(`helm get values: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** The test's `liqoctl install generic` command line, and more flags. */
const installArgs = () => [
  "install",
  "generic",
  "--kubeconfig",
  kubeconfig,
  "--cluster-name",
  "rome",
  "--pod-cidr",
  rig.clusters[0]!.podCIDR,
  "--api-server-url",
  apiServerUrl,
  "--set",
  "proxy.enabled=true",
  "--timeout",
  "8m",
];

/**
 * Scrapes each URL from inside a liqo pod (the image has Bun, not curl) three ways: with no token,
 * with the pod's own ServiceAccount token (authenticated, not allowed /metrics), and with `token`.
 * The certificate is checked against the install's CA and the name liqo-metrics.liqo.svc.
 */
async function scrapeFrom(workloadName: string, urls: Record<string, string>, token: string) {
  const script = `
const urls = ${JSON.stringify(urls)};
const ca = await Bun.file("/etc/liqo/metrics-tls/ca.crt").text();
const own = (await Bun.file("/var/run/secrets/kubernetes.io/serviceaccount/token").text()).trim();
const name = "DNS:liqo-metrics.${NS}.svc";
const tls = { ca, checkServerIdentity: (_h, cert) => String(cert.subjectaltname ?? "").split(", ").includes(name) ? undefined : new Error("certificate names " + cert.subjectaltname) };
const get = async (url, token) => {
  try {
    const r = await fetch(url, { tls, headers: token ? { authorization: "Bearer " + token } : {} });
    const body = await r.text();
    return { status: r.status, process: /^process_cpu_seconds_total /m.test(body), liqo: (body.match(/^liqo_[a-z_]+/gm) ?? []).length };
  } catch (e) { return { error: String(e) }; }
};
const out = {};
for (const [pod, url] of Object.entries(urls)) out[pod] = { none: await get(url), own: await get(url, own), scraper: await get(url, ${JSON.stringify(token)}) };
console.log(JSON.stringify(out));`;
  const r = await execIn(workloadName, ["bun", "-e", script]);
  if (r.code !== 0) throw new Error(`scrape from ${workloadName} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<
    string,
    Record<"none" | "own" | "scraper", { status?: number; process?: boolean; liqo?: number; error?: string }>
  >;
}

/** Runs a command in the (first) pod of a workload. */
async function execIn(workloadName: string, cmd: string[]) {
  const pod = (await podsOf(workloadName)).find(isReady);
  if (!pod) throw new Error(`no Ready pod of ${workloadName}`);
  return k("exec", "-n", NS, pod.metadata.name!, "--", ...cmd);
}

/** The memory of one pod's processes, from the node's cgroup v1 memory hierarchy (the containers are host processes). */
const podMemory = (pod: Pod) => podMemoryOf(pod.metadata.uid!, [nodeNetns]);

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], realNodes: 1 });
  client = rig.client("rome");
  const c = rig.clusters[0]!;
  kubeconfig = c.kubeconfig;
  kubectl = join(rig.bin, "kubectl");
  // Where peers reach this API server: the host's address on the rig bridge (a SAN of its certificate).
  apiServerUrl = `https://${rig.network!.gateway}:${c.ports.apiserver}`;
  const node = c.realNodeStates![0]!;
  nodeIp = node.ip;
  nodeNetns = node.netns;
}, 900_000);

afterAll(async () => {
  await rig?.down();
});

describe("the chart in-cluster on a real node", () => {
  test("liqoctl install: every role a Ready pod of the project's image, auth falling back to NodePort", async () => {
    const started = performance.now();
    const r = await liqoctl(installArgs());
    const liqoctlDone = performance.now();
    if (r.code !== 0) console.error(r.stderr, await podSummary());
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("liqo installed in namespace liqo (cluster rome)");
    // No load balancer controller on the rig: the probe Service got no address, the Services are NodePort.
    expect(r.stderr).toContain("auth and gateway Services fall back to NodePort");
    const pods = await waitFor("every liqo workload Ready", allReady, {
      timeoutMs: 120_000,
      intervalMs: 250,
      describe: podSummary,
    });
    const ready = performance.now();
    console.log(
      `install → all liqo pods Ready: ${((ready - started) / 1000).toFixed(1)} s (liqoctl install returned after ${((liqoctlDone - started) / 1000).toFixed(1)} s, including the load balancer probe's 5 s quiet period)`,
    );
    console.log((await k("get", "pods", "-n", NS, "-o", "wide")).stdout);

    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: NS })).toBe("deployed");
    for (const name of workloads) {
      const w = (await workload(name))!;
      expect({ name, image: w.spec.template.spec.containers[0]!.image }).toEqual({ name, image: IMAGE });
    }
    expect(pods.map((p) => p.metadata.labels?.["app.kubernetes.io/name"]).sort()).toEqual([...workloads].sort());
    for (const p of pods) {
      const status = p.status!.containerStatuses![0]!;
      // The container started from the image imported into the node (an image ID is a content digest).
      expect({
        pod: p.metadata.name,
        node: p.spec.nodeName,
        image: status.image,
        ready: status.ready,
        imageID: /sha256:[0-9a-f]{64}/.test(status.imageID),
      }).toEqual({
        pod: p.metadata.name,
        node: rig.clusters[0]!.realNodeStates![0]!.name,
        image: IMAGE,
        ready: true,
        imageID: true,
      });
    }

    const auth = await client.get<Service>(Resources.services, "liqo-auth", NS);
    expect(auth.spec.type).toBe("NodePort");
    expect((await client.get<Service>(Resources.services, "liqo-gateway", NS)).spec.type).toBe("NodePort");
    // The probe Service is gone.
    expect(
      (await client.list(Resources.services, { namespace: "default" })).items
        .map((s) => s.metadata.name)
        .filter((n) => n!.startsWith("liqoctl-lb-probe")),
    ).toEqual([]);
    const authArgs = (await workload("liqo-auth"))!.spec.template.spec.containers[0]!.args;
    expect(authArgs.slice(authArgs.indexOf("--api-server-url"), authArgs.indexOf("--api-server-url") + 2)).toEqual([
      "--api-server-url",
      apiServerUrl,
    ]);
  }, 900_000);

  test("the roles work: auth answers through its node port, the webhook through its Service, the gateway has its tunnel device", async () => {
    // The auth service from outside the cluster, as a peer reaches it: node address and node port.
    const nodePort = (await client.get<Service>(Resources.services, "liqo-auth", NS)).spec.ports[0]!.nodePort!;
    const uid = (await client.get(Resources.namespaces, "kube-system")).metadata.uid;
    const ids = await waitFor(
      "liqo-auth /ids through the node port",
      async () => {
        const r = await run(["curl", "-sk", "--max-time", "5", `https://${nodeIp}:${nodePort}/ids`]);
        return r.code === 0 && r.stdout.includes(uid!) && r.stdout;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(ids).toContain(uid!);

    // The API server calls the pod webhook through the liqo-webhook Service. The answer is the
    // webhook's own: a namespace labelled for scheduling but not offloaded gets its pods refused
    // with the fix. (Unreachable, the API server would say "failed calling webhook" instead.)
    await client.create(Resources.namespaces, {
      metadata: { name: "webhook-probe", labels: { "liqo.io/scheduling-enabled": "true" } },
    });
    const refused = await client
      .create(Resources.pods, {
        metadata: { name: "probe", namespace: "webhook-probe" },
        spec: { containers: [{ name: "c", image: "ghcr.io/liqo-bun/hello:0.1.0", imagePullPolicy: "Never" }] },
      } as KubeObject)
      .then(
        () => "created",
        (err: Error) => err.message,
      );
    expect(refused).toContain(
      `admission webhook "pod.mutate.liqo.io" denied the request: namespace webhook-probe is labelled liqo.io/scheduling-enabled=true but is not offloaded`,
    );
    // Outside labelled namespaces the webhook is not called: the same pod is admitted.
    await client.create(Resources.namespaces, { metadata: { name: "webhook-free" } });
    await client.create(Resources.pods, {
      metadata: { name: "probe", namespace: "webhook-free" },
      spec: { containers: [{ name: "c", image: "ghcr.io/liqo-bun/hello:0.1.0", imagePullPolicy: "Never" }] },
    } as KubeObject);
    for (const ns of ["webhook-probe", "webhook-free"]) await client.delete(Resources.namespaces, ns);

    // The gateway is active with its WireGuard device (wireguard-go: no kernel module here) and
    // forwarding on in its network namespace: /dev/net/tun, a writable /var/run/wireguard and /proc/sys.
    const link = await waitFor(
      "liqo.wg in the gateway pod",
      async () => {
        const r = await execIn("liqo-gateway", ["ip", "-j", "link", "show", "liqo.wg"]);
        return r.code === 0 && r.stdout;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(JSON.parse(link)[0].ifname).toBe("liqo.wg");
    expect((await execIn("liqo-gateway", ["cat", "/proc/sys/net/ipv4/ip_forward"])).stdout.trim()).toBe("1");
    expect((await execIn("liqo-gateway", ["ls", "/var/run/wireguard"])).stdout.trim()).toBe("liqo.wg.sock");
    // The route agent runs on the node's own network (hostNetwork): it sees the node's eth0 and address.
    expect((await execIn("liqo-route", ["ip", "-j", "-4", "addr", "show", "eth0"])).stdout).toContain(nodeIp);
  }, 300_000);

  test("each pod runs as its chart ServiceAccount, which RBAC limits", async () => {
    const roles = ["auth", "controller-manager", "gateway", "network-manager", "webhook", "proxy", "route"];
    for (const role of roles) {
      const [pod] = await podsOf(`liqo-${role}`);
      expect({ role, sa: pod?.spec.serviceAccountName }).toEqual({ role, sa: `liqo-${role}` });
      // The token the kubelet mounted in that container: the API server names its owner, and refuses what RBAC does not grant.
      const token = (
        await execIn(`liqo-${role}`, ["cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"])
      ).stdout.trim();
      // No kubeconfig (its admin client certificate would win): just the server, its CA and the token.
      const as = (...args: string[]) =>
        run([
          kubectl,
          "--kubeconfig",
          "/dev/null",
          "--server",
          rig.clusters[0]!.server,
          "--certificate-authority",
          rig.clusters[0]!.pki.ca.cert,
          "--token",
          token,
          ...args,
        ]);
      const who = await as("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}");
      expect({ role, who: who.stdout }).toEqual({ role, who: `system:serviceaccount:liqo:liqo-${role}` });
      const forbidden = await as(
        "create",
        "deployment",
        "intruder",
        "--image",
        IMAGE,
        "-n",
        "kube-system",
        "--dry-run=server",
      );
      expect({ role, code: forbidden.code, forbidden: /forbidden/i.test(forbidden.stderr) }).toEqual({
        role,
        code: 1,
        forbidden: true,
      });
    }
    // What each role is denied and what it needs, as the API server's authorizer answers for the ServiceAccount.
    const canI = async (sa: string, ...args: string[]) =>
      (await k("auth", "can-i", `--as=system:serviceaccount:liqo:${sa}`, ...args)).stdout.trim();
    expect(await canI("liqo-webhook", "list", "secrets", "-n", "kube-system")).toBe("no");
    expect(await canI("liqo-gateway", "create", "clusterroles")).toBe("no");
    expect(await canI("liqo-proxy", "list", "pods", "-n", NS)).toBe("no");
    expect(await canI("liqo-route", "delete", "nodes")).toBe("no");
    expect(await canI("liqo-controller-manager", "list", "foreignclusters.discovery.liqo.io")).toBe("yes");
    expect(await canI("liqo-network-manager", "list", "foreignclusters.discovery.liqo.io")).toBe("yes");
  }, 300_000);

  test("the kubelet probes each role over httpGet on its health port; liqoctl install --enable-metrics on the installed release (its other values kept): every pod serves /metrics over HTTPS to the chart's scraper identity, 401 without a token, 403 to a token without liqo-metrics-reader", async () => {
    for (const name of workloads) {
      const c = (await workload(name))!.spec.template.spec.containers[0] as unknown as ProbedContainer;
      expect({ name, readiness: c.readinessProbe?.httpGet?.port, liveness: c.livenessProbe?.httpGet?.port }).toEqual({
        name,
        readiness: "health",
        liveness: "health",
      });
    }
    // Enabling metrics on the installed release, as a user would: that flag alone. The values of
    // the first install (its flags and its --set proxy.enabled=true) stay; the change is shown.
    const valuesBefore = await releaseValuesOf();
    const r = await liqoctl(["install", "generic", "--kubeconfig", kubeconfig, "--enable-metrics", "--timeout", "8m"]);
    if (r.code !== 0) console.error(r.stderr, await podSummary());
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "liqo is installed in namespace liqo: its values stay, except\n  metrics.enabled: (unset) → true\n",
    );
    expect(await releaseValuesOf()).toEqual({ ...valuesBefore, metrics: { enabled: true } });
    expect(valuesBefore).toMatchObject({ clusterName: "rome", proxy: { enabled: true } });
    const pods = await waitFor(
      "every liqo pod Ready with a metrics port",
      async () => {
        const all = await allReady();
        return all && all.every((p) => metricsPort(p) !== undefined) && all;
      },
      { timeoutMs: 240_000, intervalMs: 1000, describe: podSummary },
    );
    // The scraper's token, filled in by the cluster's token controller.
    const token = await waitFor(
      "the liqo-metrics-scraper token",
      async () => {
        const secret = await client.find<KubeObject & { data?: Record<string, string> }>(
          Resources.secrets,
          "liqo-metrics-scraper",
          NS,
        );
        return secret?.data?.token && Buffer.from(secret.data.token, "base64").toString();
      },
      { timeoutMs: 60_000 },
    );
    const urls = Object.fromEntries(
      pods.map((p) => [
        p.metadata.labels!["app.kubernetes.io/name"]!,
        `https://${p.status!.podIP}:${metricsPort(p)}/metrics`,
      ]),
    );
    const seen = await scrapeFrom("liqo-controller-manager", urls, token);
    console.log(`scrapes from the controller manager's pod: ${JSON.stringify(seen)}`);
    for (const name of workloads) {
      const s = seen[name]!;
      expect({
        name,
        none: s.none.status,
        own: s.own.status,
        scraper: s.scraper.status,
        process: s.scraper.process,
      }).toEqual({
        name,
        none: 401,
        own: 403,
        scraper: 200,
        process: true,
      });
    }
    // The controller manager's own series are there (peerings, reflection), not only the process'.
    expect(seen["liqo-controller-manager"]!.scraper.liqo).toBeGreaterThan(0);
  }, 600_000);

  test("a real Prometheus (a plain prometheus.yml with the PodMonitor's settings, its ServiceAccount bound to liqo-metrics-reader) scrapes every liqo pod; every query of chart/dashboards returns series; the same scrape without credentials is refused with 401", async () => {
    // The image is built on first use (Debian's prometheus, a few minutes once) and imported into
    // the real node, as the storage tests do with postgres.
    const node = rig.clusters[0]!.realNodeStates![0]!;
    const say = process.env.RIG_VERBOSE ? (m: string) => console.error(`[prometheus image] ${m}`) : () => {};
    const [image] = await ensureImages(["prometheus"], say);
    await importImages(node.containerdSocket, [image!.archive]);
    try {
      const prometheus = await deployPrometheus(client, { liqoNamespace: NS, nodeName: node.name });
      const liqoPods = await waitFor("every liqo workload Ready", allReady, {
        timeoutMs: 120_000,
        describe: podSummary,
      });
      expect(liqoPods.length).toBe(workloads.length);
      expect(liqoPods.every((p) => metricsPort(p) !== undefined)).toBe(true);
      const targets = async () =>
        (await prometheusTargets(client)).map((t) => ({
          job: t.scrapePool,
          pod: t.labels.pod,
          health: t.health,
          lastError: t.lastError,
        }));

      const up = await waitFor(
        `up{job="${LIQO_JOB}"} = 1 for each of the ${liqoPods.length} liqo pods`,
        async () => {
          const s = await queryPrometheus(client, `up{job="${LIQO_JOB}"}`);
          return s.length === liqoPods.length && s.every((x) => x.value[1] === "1") && s;
        },
        { timeoutMs: 120_000, intervalMs: 2000, describe: targets },
      );
      expect(up.map((s) => s.metric.pod).sort()).toEqual(liqoPods.map((p) => p.metadata.name).sort());
      console.log(
        `Prometheus ${prometheus}: up{job="${LIQO_JOB}"} = 1 for ${up.length} pods (${up.map((s) => s.metric.pod).join(", ")})`,
      );
      // rate() over the dashboards' 1m window needs two samples of each series: a few more scrapes.
      await waitFor(
        "two scrapes of every liqo pod inside a minute",
        async () =>
          (await queryPrometheus(client, `count(rate(process_cpu_seconds_total{job="${LIQO_JOB}"}[1m]))`))[0]
            ?.value[1] === String(liqoPods.length),
        { timeoutMs: 60_000, intervalMs: 2000 },
      );
      // The webhook's admission series are scraped from its start (at 0 until a review comes). A
      // pod in a namespace labelled for scheduling but not offloaded goes through it (refused) and
      // is counted: the denied count goes up by 1 in Prometheus, and the latency panel has a real
      // quantile to draw.
      const webhookJob = `job="${LIQO_JOB}", webhook="pod.mutate.liqo.io", operation="CREATE"`;
      const denied = `sum(liqo_webhook_admission_requests_total{${webhookJob}, result="denied"})`;
      const deniedBefore = Number((await queryPrometheus(client, denied))[0]?.value[1]);
      expect(deniedBefore).toBeGreaterThanOrEqual(0);
      await client.create(Resources.namespaces, {
        metadata: { name: "webhook-metrics", labels: { "liqo.io/scheduling-enabled": "true" } },
      });
      const refusal = await client
        .create(Resources.pods, {
          metadata: { name: "probe", namespace: "webhook-metrics" },
          spec: { containers: [{ name: "c", image: "ghcr.io/liqo-bun/hello:0.1.0", imagePullPolicy: "Never" }] },
        } as KubeObject)
        .then(
          () => "created",
          (err: Error) => err.message,
        );
      expect(refusal).toContain(`admission webhook "pod.mutate.liqo.io" denied the request`);
      await client.delete(Resources.namespaces, "webhook-metrics");
      await waitFor(
        "the refused pod counted in liqo_webhook_admission_requests_total, scraped",
        async () => Number((await queryPrometheus(client, denied))[0]?.value[1]) === deniedBefore + 1,
        { timeoutMs: 60_000, intervalMs: 2000 },
      );
      const p99 = await queryPrometheus(
        client,
        `histogram_quantile(0.99, sum by (le) (rate(liqo_webhook_admission_duration_seconds_bucket{${webhookJob}}[1m])))`,
      );
      // One review over the API server's loopback to a pod: well under the webhook's 5 s timeout.
      expect(Number(p99[0]?.value[1])).toBeGreaterThan(0);
      expect(Number(p99[0]?.value[1])).toBeLessThan(5);
      console.log(
        `pod webhook: denied admissions ${deniedBefore} → ${deniedBefore + 1} in Prometheus, p99 ${p99[0]?.value[1]} s`,
      );

      // Every panel's query, evaluated as Grafana would (variables at their defaults). "live": the
      // series without the `or on() vector(0)` a panel adds where no series means zero.
      const queries = dashboardQueries(join(import.meta.dir, "../../chart/dashboards"));
      const registered = registeredMetricNames(join(import.meta.dir, "../.."));
      const FALLBACK = " or on() vector(0)";
      const rows = [];
      for (const q of queries) {
        const series = (await queryPrometheus(client, q.expr)).length;
        const live = q.expr.endsWith(FALLBACK)
          ? (await queryPrometheus(client, q.expr.slice(0, -FALLBACK.length))).length
          : series;
        const unknown = metricNames(q.expr)
          .map(declaredName)
          .filter((n) => !registered.has(n));
        rows.push({ ...q, series, live, unknown });
      }
      console.log(`${queries.length} dashboard queries (series / live series without the zero fallback):`);
      for (const r of rows)
        console.log(
          `  ${String(r.series).padStart(3)} / ${String(r.live).padStart(3)}  ${`${r.file} ${r.panel} ${r.refId}`.padEnd(80)} ${r.needsPeering ? "(needs a peering) " : ""}${r.expr}`,
        );
      // No dashboard reads a name the code does not register.
      expect(rows.filter((r) => r.unknown.length).map((r) => `${r.panel}: ${r.unknown.join(", ")}`)).toEqual([]);
      // Every panel has data, but those that say they need a peering (latency quantiles: no honest zero).
      expect(rows.filter((r) => !r.needsPeering && r.series === 0).map((r) => `${r.file}: ${r.panel}`)).toEqual([]);
      expect(rows.filter((r) => r.needsPeering).length).toBeLessThan(rows.length / 4);

      // The second job scrapes the same pods with no Authorization header: each one answers 401.
      const refused = await waitFor(
        `every target of ${ANONYMOUS_JOB} down with 401`,
        async () => {
          const t = (await targets()).filter((x) => x.job === ANONYMOUS_JOB);
          return (
            t.length === liqoPods.length && t.every((x) => x.health === "down" && /\b401\b/.test(x.lastError)) && t
          );
        },
        { timeoutMs: 60_000, intervalMs: 2000, describe: targets },
      );
      const anonymousUp = await queryPrometheus(client, `up{job="${ANONYMOUS_JOB}"}`);
      expect(anonymousUp.map((s) => s.value[1])).toEqual(liqoPods.map(() => "0"));
      console.log(
        `${ANONYMOUS_JOB}: ${refused.length} targets down, e.g. ${refused[0]!.pod}: ${refused[0]!.lastError}`,
      );
    } finally {
      await removePrometheus(client, { liqoNamespace: NS });
    }
  }, 1_200_000);

  test("idle memory of each liqo pod (printed)", async () => {
    // Idle: every pod up for at least 30 s, nothing peered, no request but the probes.
    const pods = await waitFor(
      "every liqo pod Ready for 30 s",
      async () => {
        const all = await allReady();
        return all && all.every((p) => Date.now() - Date.parse(p.metadata.creationTimestamp!) > 30_000) && all;
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    expect(pods.length).toBe(workloads.length);
    const rows = pods.map((p) => ({ pod: p.metadata.name!, ...podMemory(p) }));
    console.log(
      "idle memory per liqo pod: VmRSS summed over the pod's processes (pause excluded) / the pod cgroup's total_rss",
    );
    for (const r of rows)
      console.log(
        `  ${r.pod.padEnd(44)} ${String(r.rssMiB ?? "?").padStart(4)} MiB / ${String(r.cgroupRssMiB ?? "?").padStart(4)} MiB  (${r.processes?.join(", ") ?? "cgroup not found"})`,
      );
    // The measurement itself must have found the processes: a silent zero would be no measurement.
    expect(rows.every((r) => (r.rssMiB ?? 0) > 0)).toBe(true);
  }, 180_000);

  test("each role's pod deleted: a new one becomes Ready and works", async () => {
    for (const name of workloads) {
      const before = (await podsOf(name)).map((p) => p.metadata.uid);
      expect({ name, pods: before.length }).toEqual({ name, pods: 1 });
      const started = performance.now();
      expect((await k("delete", "pod", "-n", NS, "-l", `app.kubernetes.io/name=${name}`, "--wait=false")).code).toBe(0);
      const fresh = await waitFor(
        `a new Ready pod of ${name}`,
        async () => {
          const pods = await podsOf(name);
          return pods.length === 1 && !before.includes(pods[0]!.metadata.uid) && isReady(pods[0]!) && pods[0]!;
        },
        { timeoutMs: 180_000, intervalMs: 250, describe: podSummary },
      );
      console.log(
        `${name}: new pod ${fresh.metadata.name} Ready ${((performance.now() - started) / 1000).toFixed(1)} s after the delete`,
      );
    }
    await waitFor("every liqo workload Ready", allReady, { timeoutMs: 120_000, describe: podSummary });
    // Converged: the new gateway took the Lease and rebuilt its device; the new auth pod serves.
    const link = await waitFor(
      "liqo.wg in the new gateway pod",
      async () => (await execIn("liqo-gateway", ["ip", "link", "show", "liqo.wg"])).code === 0,
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(link).toBe(true);
    const lease = await client.get<KubeObject & { spec: { holderIdentity?: string } }>(
      { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true },
      "liqo-gateway",
      NS,
    );
    const gatewayPod = (await podsOf("liqo-gateway"))[0]!;
    expect(lease.spec.holderIdentity).toStartWith(gatewayPod.metadata.name!);
    const nodePort = (await client.get<Service>(Resources.services, "liqo-auth", NS)).spec.ports[0]!.nodePort!;
    const ids = await waitFor(
      "the new auth pod answering",
      async () => {
        const r = await run(["curl", "-sk", "--max-time", "5", `https://${nodeIp}:${nodePort}/ids`]);
        return r.code === 0 && r.stdout;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(ids).toContain((await client.get(Resources.namespaces, "kube-system")).metadata.uid!);
  }, 900_000);

  test("liqoctl uninstall --purge leaves nothing of liqo in the cluster", async () => {
    const r = await liqoctl(["uninstall", "--purge", "--kubeconfig", kubeconfig, "--timeout", "5m"]);
    if (r.code !== 0) console.error(r.stderr);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("liqo purged");
    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: NS })).toBeUndefined();
    const left = await waitFor(
      "the liqo namespace to be gone",
      async () => (await client.find(Resources.namespaces, NS)) === undefined,
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    expect(left).toBe(true);
    const crds = (
      await client.list<KubeObject & { spec: { group: string } }>(Resources.customResourceDefinitions)
    ).items.filter((c) => c.spec.group.endsWith("liqo.io"));
    expect(crds.map((c) => c.metadata.name)).toEqual([]);
    const named = async (res: ResourceRef) =>
      (await client.list(res)).items
        .filter(
          (o) =>
            o.metadata.name!.startsWith("liqo") ||
            Object.values(o.metadata.labels ?? {}).some((v) => v === "liqo" || v.startsWith("liqo-")),
        )
        .map((o) => `${res.kind}/${o.metadata.name}`);
    expect([
      ...(await named(Resources.clusterRoles)),
      ...(await named(Resources.clusterRoleBindings)),
      ...(await named(admission("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"))),
      ...(await named(admission("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"))),
      ...(await named(admission("ValidatingAdmissionPolicy", "validatingadmissionpolicies"))),
      ...(await named(admission("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"))),
    ]).toEqual([]);
    // No pod of liqo's image is left anywhere, nor a Lease or Role of liqo outside its namespace.
    const pods = (await client.list<Pod>(Resources.pods)).items.filter((p) =>
      p.spec.containers.some((c) => c.image === IMAGE),
    );
    expect(pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual([]);
    const roles = (await client.list(Resources.roles)).items.filter((o) => o.metadata.name!.startsWith("liqo"));
    expect(roles.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([]);
  }, 600_000);
});
