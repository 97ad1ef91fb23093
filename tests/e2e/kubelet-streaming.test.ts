// kubectl exec -i and kubectl port-forward through the virtual kubelet, against a real container.
// The cheapest rig that has one: a single cluster with one real node (containerd, kubelet). The
// virtual node lives in that same cluster and its "remote" is the cluster itself: the pod bound to
// the virtual node (nginx-virtual) is resolved to a real pod (nginx) on the real node, so kubectl →
// kube-apiserver → our kubelet API (SPDY) → the API server's pods/exec, pods/portforward → kubelet.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { VIRTUAL_NODE_TOLERATION } from "../../core/apis/labels.ts";
import { createLogger } from "../../core/log.ts";
import { createVirtualNode, type VirtualNode } from "../../core/virtualkubelet/node/index.ts";
import { createKubeletApi, type KubeletApi } from "../../core/virtualkubelet/kubeletapi/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { kubectlRun } from "../support/kubectl.ts";

let rig: TestRig;
let client: KubeClient;
let api: KubeletApi | undefined;
let vn: VirtualNode | undefined;
const logs: Array<Record<string, unknown>> = [];
const NS = "liqo-demo";
const IMAGE = "ghcr.io/liqo-bun/hello:0.1.0";
type Pod = KubeObject & { spec: { nodeName?: string }; status?: { phase?: string; podIP?: string } };

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], realNodes: 1 });
  client = rig.client("rome");
  const pki = rig.clusters[0]!.pki;
  api = await createKubeletApi({
    remote: client,
    resolvePod: (ns, name) =>
      ns === NS && name === "nginx-virtual" ? { remoteNamespace: NS, remoteName: "nginx" } : undefined,
    tls: { cert: readFileSync(pki.kwokServing.cert), key: readFileSync(pki.kwokServing.key) },
    auth: { clientCA: readFileSync(pki.ca.cert) },
    host: "127.0.0.1",
    port: 0,
    nodeName: "liqo-self",
    logger: createLogger({}, { level: "debug", write: (line) => logs.push(JSON.parse(line)) }),
  });
  vn = createVirtualNode({
    local: client,
    remote: client,
    remoteClusterId: "id-self",
    remoteClusterName: "self",
    remoteClusterLabels: {},
    resources: { cpu: "4", memory: "8Gi", pods: "110" },
    nodeName: "liqo-self",
    address: "127.0.0.1",
    kubeletPort: api.port,
    kubeletVersion: "v1.34.4-liqo",
  });
  await vn.start();
  await client.create(Resources.namespaces, { metadata: { name: NS } });
  await client.create(Resources.pods, {
    metadata: { name: "nginx", namespace: NS },
    spec: {
      nodeName: rig.clusters[0]!.realNodeStates![0]!.name,
      containers: [{ name: "app", image: IMAGE, imagePullPolicy: "Never" }],
    },
  });
  // Bound straight to the virtual node: the API server sends its exec and port-forward to our kubelet API.
  await client.create(Resources.pods, {
    metadata: { name: "nginx-virtual", namespace: NS },
    spec: {
      nodeName: "liqo-self",
      tolerations: [VIRTUAL_NODE_TOLERATION],
      containers: [{ name: "app", image: IMAGE }],
    },
  });
  // kubectl port-forward wants a Running pod; pod reflection (not started here) would report it so.
  await client.mergePatch(Resources.pods, "nginx-virtual", NS, { status: { phase: "Running" } }, "status");
  await waitFor(
    "the real pod Running",
    async () => (await client.get<Pod>(Resources.pods, "nginx", NS)).status?.phase === "Running",
    { timeoutMs: 180_000 },
  );
}, 900_000);

afterAll(async () => {
  await vn?.stop().catch(() => {});
  await api?.close().catch(() => {});
  await rig?.down();
});

/** kubectl with a deadline: a hang is a failure with what it printed so far, not a stuck suite. */
async function kubectl(args: string[], stdin?: string, ms = 20_000) {
  const r = await kubectlRun(join(rig.bin, "kubectl"), rig.clusters[0]!.kubeconfig, args, { stdin, timeoutMs: ms });
  return { stdout: r.out, stderr: r.err, exitCode: r.code, killed: r.killed };
}

describe("kubectl exec -i through the virtual kubelet", () => {
  const script = "tr a-z A-Z; hostname";

  test("the end of stdin reaches the remote process: the command finishes as it does on the real pod", async () => {
    const direct = await kubectl(["exec", "-i", "-n", NS, "nginx", "--", "sh", "-c", script], "hi\n");
    expect(direct).toMatchObject({ exitCode: 0, killed: false });
    expect(direct.stdout).toStartWith("HI\n");

    logs.length = 0;
    const virtual = await kubectl(["exec", "-i", "-n", NS, "nginx-virtual", "--", "sh", "-c", script], "hi\n");
    expect(virtual.killed).toBe(false);
    expect(virtual.exitCode).toBe(0);
    expect(virtual.stdout).toBe(direct.stdout);
    // How the EOF travelled: kube-apiserver (translating kubectl's v5 WebSocket, or relaying its
    // SPDY) closes our stdin stream with an empty FIN frame; the remote API server took v5.
    expect(logs.find((l) => l.msg === "exec stdin ended")).toMatchObject({ by: "fin" });
    expect(logs.find((l) => l.msg === "exec ended")).toMatchObject({
      remoteProtocol: "v5.channel.k8s.io",
      stdinEnded: true,
    });
  }, 60_000);

  test("a larger input, all of it, then EOF", async () => {
    const input = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const r = await kubectl(["exec", "-i", "-n", NS, "nginx-virtual", "--", "md5sum"], input, 30_000);
    expect(r.killed).toBe(false);
    expect(r.stdout.split(" ")[0]).toBe(new Bun.CryptoHasher("md5").update(input).digest("hex"));
  }, 60_000);
});

/** `kubectl port-forward pod/<pod> :<port>`: resolves with the local port once kubectl forwards. */
async function portForward(pod: string, port: number) {
  const proc = Bun.spawn(
    [
      join(rig.bin, "kubectl"),
      "--kubeconfig",
      rig.clusters[0]!.kubeconfig,
      "port-forward",
      "-n",
      NS,
      `pod/${pod}`,
      `:${port}`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  let out = "";
  let err = "";
  void (async () => {
    for await (const c of proc.stderr) err += new TextDecoder().decode(c);
  })();
  const reader = proc.stdout.getReader();
  // kubectl prints the local port once the virtual kubelet's stream is up: seconds, more under load
  // (20 s was not always enough with two shards of in-cluster tests beside it).
  const deadline = Date.now() + 60_000;
  let local = 0;
  while (!local && Date.now() < deadline) {
    const chunk = await Promise.race([reader.read(), Bun.sleep(1000).then(() => undefined)]);
    if (chunk?.done) break;
    if (chunk?.value) out += new TextDecoder().decode(chunk.value);
    local = Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(out)?.[1] ?? 0);
  }
  return { local, stderr: () => err, proc };
}

describe("kubectl port-forward through the virtual kubelet", () => {
  test("HTTP requests to a forwarded port reach nginx in the remote pod, one after another and at once", async () => {
    // Each answer names its time and request ID: those two vary, the rest is the same.
    const masked = (body: string) =>
      body.replace(/^Date: .*$/m, "Date: -").replace(/^Request ID: .*$/m, "Request ID: -");
    const expected = masked(
      (await kubectl(["exec", "-n", NS, "nginx", "--", "curl", "-s", "http://127.0.0.1/"])).stdout,
    );
    expect(expected.length).toBeGreaterThan(0);
    const pf = await portForward("nginx-virtual", 80);
    try {
      expect({ local: pf.local > 0, stderr: pf.stderr() }).toEqual({ local: true, stderr: "" });
      const get = async () => {
        const res = await fetch(`http://127.0.0.1:${pf.local}/`, { signal: AbortSignal.timeout(10_000) });
        return { status: res.status, body: masked(await res.text()) };
      };
      for (let i = 0; i < 3; i++) expect(await get()).toEqual({ status: 200, body: expected });
      const together = await Promise.all(Array.from({ length: 5 }, get));
      for (const r of together) expect(r).toEqual({ status: 200, body: expected });
      expect(pf.proc.exitCode).toBeNull();
      expect(api!.stats.portForwards).toBeGreaterThan(0);
    } finally {
      pf.proc.kill();
    }
  }, 60_000);

  test("a port nothing listens on: the connection fails and kubectl says why, instead of hanging", async () => {
    const pf = await portForward("nginx-virtual", 81);
    try {
      expect({ local: pf.local > 0, stderr: pf.stderr() }).toEqual({ local: true, stderr: "" });
      const started = Date.now();
      const answer = await fetch(`http://127.0.0.1:${pf.local}/`, { signal: AbortSignal.timeout(15_000) }).then(
        (r) => `status ${r.status}`,
        (e: Error) => e.name,
      );
      expect(answer).not.toBe("TimeoutError");
      expect(Date.now() - started).toBeLessThan(10_000);
      await waitFor("kubectl reporting the refused port", () => /connection refused/.test(pf.stderr()), {
        timeoutMs: 10_000,
        describe: pf.stderr,
      });
    } finally {
      pf.proc.kill();
    }
  }, 60_000);
});
