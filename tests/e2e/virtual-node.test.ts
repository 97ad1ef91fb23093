// The virtual node and the kubelet API on a real rig: rome consumes (the virtual node appears there),
// milan provides. The remote API server is reached through a TCP relay the test can cut, so
// "the remote stops answering" is a real refused connection, not a mock.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TCPSocketListener, Socket } from "bun";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { VIRTUAL_NODE_TAINT } from "../../core/apis/labels.ts";
import { createVirtualNode, VirtualNodeError, type VirtualNode } from "../../core/virtualkubelet/node/index.ts";
import type { VirtualNodeObject, LeaseObject } from "../../core/virtualkubelet/node/forge.ts";
import { createKubeletApi, type KubeletApi } from "../../core/virtualkubelet/kubeletapi/index.ts";
import { VIRTUAL_NODE_TOLERATION } from "../../core/apis/labels.ts";
import { appendFileSync, readFileSync } from "node:fs";
import { criLogLine } from "../rig/cluster.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { kubectlRun } from "../support/kubectl.ts";

let rig: TestRig;
let rome: KubeClient;
let milan: KubeClient;
const scratch = mkdtempSync(join(tmpdir(), "virtual-node-e2e-"));
const started: VirtualNode[] = [];
let api: KubeletApi | undefined;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  rome = rig.client("rome");
  milan = rig.client("milan");
}, 600_000);

/** Cleanup steps must not hang the suite: a step that does is reported by name and skipped. */
async function bounded(what: string, step: Promise<unknown>, ms = 20_000) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      console.error(`cleanup: ${what} did not finish within ${ms}ms`);
      resolve();
    }, ms);
  });
  await Promise.race([step.catch((err) => console.error(`cleanup: ${what} failed: ${err}`)), timeout]);
  clearTimeout(timer);
}

afterAll(async () => {
  for (const vn of started) await bounded(`stopping virtual node ${vn.status().nodeName}`, vn.stop());
  if (api) await bounded("closing the kubelet API", api.close());
  await rig?.down();
  rmSync(scratch, { recursive: true, force: true });
});

/** A TCP relay to milan's API server that the test can cut and restore on the same port. */
function relay(target: number) {
  let listener: TCPSocketListener<{ peer?: Socket<unknown>; pending: Uint8Array[] }> | undefined;
  const open = new Set<Socket<unknown>>();
  let port = 0;
  const up = () => {
    listener = Bun.listen<{ peer?: Socket<unknown>; pending: Uint8Array[] }>({
      hostname: "127.0.0.1",
      port,
      socket: {
        async open(client) {
          client.data = { pending: [] };
          open.add(client);
          const upstream = await Bun.connect<{ peer: Socket<unknown> }>({
            hostname: "127.0.0.1",
            port: target,
            socket: {
              data(_s, d) {
                client.write(d);
              },
              close() {
                client.end();
              },
              error() {
                client.end();
              },
            },
            data: { peer: client },
          });
          open.add(upstream as Socket<unknown>);
          client.data.peer = upstream as Socket<unknown>;
          for (const chunk of client.data.pending) upstream.write(chunk);
        },
        data(client, d) {
          if (client.data.peer) client.data.peer.write(d);
          else client.data.pending.push(new Uint8Array(d));
        },
        close(client) {
          client.data.peer?.end();
          open.delete(client);
        },
        error(client) {
          client.data.peer?.end();
        },
      },
    });
    port = listener.port;
  };
  up();
  return {
    get port() {
      return port;
    },
    cut() {
      listener?.stop(true);
      listener = undefined;
      for (const s of open) s.terminate();
      open.clear();
    },
    restore: up,
  };
}

function milanThrough(port: number): KubeClient {
  const cluster = rig.clusters.find((c) => c.name === "milan")!;
  const file = join(scratch, `milan-via-${port}.kubeconfig`);
  const text = Bun.spawnSync(["cat", cluster.kubeconfig])
    .stdout.toString()
    .replace(cluster.server, `https://127.0.0.1:${port}`);
  writeFileSync(file, text);
  return createKubeClient({ kubeconfig: file }, { timeoutMs: 3000 });
}

const ready = (n?: VirtualNodeObject) => n?.status?.conditions?.find((c) => c.type === "Ready");

function virtualNodeFor(
  name: string,
  remote: KubeClient,
  extra: Partial<Parameters<typeof createVirtualNode>[0]> = {},
): VirtualNode {
  const vn = createVirtualNode({
    local: rome,
    remote,
    remoteClusterId: `id-${name}`,
    remoteClusterName: name,
    remoteClusterLabels: { "liqo.io/provider": "rig", "topology.kubernetes.io/region": "lombardy" },
    resources: { cpu: "4", memory: "8Gi", pods: "110" },
    address: "127.0.0.1",
    kubeletPort: 10250,
    kubeletVersion: "v1.34.4-liqo",
    healthIntervalMs: 300,
    failureThreshold: 3,
    leaseRenewMs: 1000,
    leaseDurationSeconds: 40,
    ...extra,
  });
  started.push(vn);
  return vn;
}

describe("virtual node", () => {
  test("appears with Liqo's labels, the virtual-node taint, negotiated capacity, addresses, and Ready", async () => {
    const vn = virtualNodeFor("milan", milan);
    await vn.start();
    const node = await waitFor(
      "the virtual node Ready",
      async () => {
        const n = await rome.find<VirtualNodeObject>(Resources.nodes, "liqo-milan");
        return ready(n)?.status === "True" ? n : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const labels = node.metadata.labels!;
    expect(labels["liqo.io/type"]).toBe("virtual-node");
    expect(labels["liqo.io/remote-cluster-id"]).toBe("id-milan");
    expect(labels["liqo.io/provider"]).toBe("rig");
    expect(labels["topology.kubernetes.io/region"]).toBe("lombardy");
    expect(labels["kubernetes.io/hostname"]).toBe("liqo-milan");
    expect(labels["kubernetes.io/role"]).toBe("agent");
    expect(labels.type).toBe("virtual-kubelet");
    expect(node.spec?.taints).toContainEqual(
      expect.objectContaining({ key: VIRTUAL_NODE_TAINT.key, value: "true", effect: "NoExecute" }),
    );
    expect(node.status?.capacity).toEqual({ cpu: "4", memory: "8Gi", pods: "110" });
    expect(node.status?.allocatable).toEqual({ cpu: "4", memory: "8Gi", pods: "110" });
    expect(node.status?.addresses).toContainEqual({ type: "InternalIP", address: "127.0.0.1" });
    expect(node.status?.daemonEndpoints?.kubeletEndpoint.Port).toBe(10250);
    expect(node.status?.nodeInfo?.kubeletVersion).toBe("v1.34.4-liqo");
    const types = node.status!.conditions!.map((c) => `${c.type}=${c.status}`).sort();
    expect(types).toEqual([
      "DiskPressure=False",
      "MemoryPressure=False",
      "NetworkUnavailable=False",
      "PIDPressure=False",
      "Ready=True",
    ]);
    expect(ready(node)?.reason).toBe("KubeletReady");

    const { out, code } = await kubectlRun(join(rig.bin, "kubectl"), rig.clusters[0]!.kubeconfig, [
      "get",
      "nodes",
      "-l",
      "liqo.io/type=virtual-node",
      "--no-headers",
    ]);
    expect(out).toMatch(/^liqo-milan\s+Ready\s+agent/m);
    expect(code).toBe(0);
  });

  test("the node Lease in kube-node-lease is renewed", async () => {
    const first = await waitFor("the Lease", () =>
      rome.find<LeaseObject>(Resources.leases, "liqo-milan", "kube-node-lease"),
    );
    expect(first.spec?.holderIdentity).toBe("liqo-milan");
    expect(first.spec?.leaseDurationSeconds).toBe(40);
    const node = await rome.get(Resources.nodes, "liqo-milan");
    expect(first.metadata.ownerReferences?.[0]?.uid).toBe(node.metadata.uid!);
    await waitFor(
      "a later renewTime",
      async () => {
        const l = await rome.get<LeaseObject>(Resources.leases, "liqo-milan", "kube-node-lease");
        return Date.parse(l.spec!.renewTime!) > Date.parse(first.spec!.renewTime!) || undefined;
      },
      { timeoutMs: 30_000 },
    );
  });

  test("updateResources changes capacity and allocatable, dropping resources no longer offered", async () => {
    const vn = started[0]!;
    await vn.updateResources({ cpu: "2500m", memory: "4Gi", pods: "50", "nvidia.com/gpu": "1" });
    let node = await rome.get<VirtualNodeObject>(Resources.nodes, "liqo-milan");
    expect(node.status?.capacity).toEqual({ cpu: "2500m", memory: "4Gi", pods: "50", "nvidia.com/gpu": "1" });
    await vn.updateResources({ cpu: "2", memory: "4Gi", pods: "50" });
    node = await rome.get<VirtualNodeObject>(Resources.nodes, "liqo-milan");
    expect(node.status?.allocatable).toEqual({ cpu: "2", memory: "4Gi", pods: "50" });
    await expect(vn.updateResources({ cpu: "lots" })).rejects.toThrow(
      /resource cpu="lots" is not a Kubernetes quantity/,
    );
  });

  test("a virtual node deleted by hand is re-created", async () => {
    const before = await rome.get(Resources.nodes, "liqo-milan");
    await rome.delete(Resources.nodes, "liqo-milan");
    const after = await waitFor(
      "a new liqo-milan",
      async () => {
        const n = await rome.find<VirtualNodeObject>(Resources.nodes, "liqo-milan");
        return n && n.metadata.uid !== before.metadata.uid && ready(n)?.status === "True" ? n : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(after.metadata.labels?.["liqo.io/type"]).toBe("virtual-node");
    expect(after.status?.capacity?.cpu).toBe("2");
  });

  test("goes NotReady after K failed health checks when the remote stops answering, and Ready when it answers again", async () => {
    const cluster = rig.clusters.find((c) => c.name === "milan")!;
    const link = relay(cluster.ports.apiserver);
    const vn = virtualNodeFor("milan-relay", milanThrough(link.port), { nodeName: "liqo-milan-relay" });
    await vn.start();
    await waitFor(
      "Ready",
      async () => ready(await rome.find<VirtualNodeObject>(Resources.nodes, "liqo-milan-relay"))?.status === "True",
      { timeoutMs: 30_000 },
    );

    link.cut();
    const notReady = await waitFor(
      "Ready=False",
      async () => {
        const c = ready(await rome.find<VirtualNodeObject>(Resources.nodes, "liqo-milan-relay"));
        return c?.status === "False" ? c : undefined;
      },
      { timeoutMs: 60_000, describe: () => vn.status() },
    );
    expect(notReady.reason).toBe("RemoteClusterUnreachable");
    expect(notReady.message).toMatch(/remote cluster milan-relay failed 3 consecutive health checks/);
    expect(vn.status().ready).toBe(false);
    expect(vn.status().consecutiveFailures).toBeGreaterThanOrEqual(3);
    const events = await rome.list(Resources.events, {
      namespace: "default",
      fieldSelector: "involvedObject.name=liqo-milan-relay",
    });
    expect(events.items.map((e) => (e as KubeObject & { reason?: string }).reason)).toContain(
      "RemoteClusterUnreachable",
    );
    // The lifecycle controller turns Ready=False into the not-ready taint, so taint-based eviction applies.
    await waitFor(
      "the not-ready taint",
      async () => {
        const n = await rome.get<VirtualNodeObject>(Resources.nodes, "liqo-milan-relay");
        return n.spec?.taints?.some((t) => t.key === "node.kubernetes.io/not-ready") || undefined;
      },
      { timeoutMs: 60_000 },
    );

    link.restore();
    const back = await waitFor(
      "Ready=True again",
      async () => {
        const c = ready(await rome.find<VirtualNodeObject>(Resources.nodes, "liqo-milan-relay"));
        return c?.status === "True" ? c : undefined;
      },
      { timeoutMs: 60_000, describe: () => vn.status() },
    );
    expect(back.reason).toBe("KubeletReady");
    await vn.remove();
    link.cut();
    await waitFor("the node gone", async () => !(await rome.find(Resources.nodes, "liqo-milan-relay")));
  });

  test("a Node of the same name that is not a virtual node is a clear error and is left untouched", async () => {
    await rome.create(Resources.nodes, { metadata: { name: "liqo-naples", labels: { team: "ops" } } });
    const vn = virtualNodeFor("naples", milan);
    await expect(vn.start()).rejects.toThrow(
      /Node liqo-naples already exists and is not a Liqo virtual node .*refusing to overwrite it: delete that Node or choose another name/,
    );
    expect(vn.status().error).toMatch(/not a Liqo virtual node/);
    const node = await rome.get(Resources.nodes, "liqo-naples");
    expect(node.metadata.labels).toEqual({ team: "ops" });
  });

  test("bad options are rejected before anything is written", () => {
    expect(() => virtualNodeFor("bad", milan, { resources: { cpu: "four" } })).toThrow(VirtualNodeError);
    expect(() => virtualNodeFor("bad", milan, { address: "" })).toThrow(/address "" is not an IP address/);
    expect(() => virtualNodeFor("bad", milan, { kubeletPort: 70000 })).toThrow(/kubeletPort 70000 is not a TCP port/);
    expect(() => virtualNodeFor("bad", milan, { failureThreshold: 0 })).toThrow(
      /failureThreshold must be a positive number/,
    );
    expect(() => virtualNodeFor("Bad_Name", milan)).toThrow(/node name "liqo-Bad_Name" is not a valid DNS subdomain/);
  });
});

// kubectl runs asynchronously: the kubelet API it ends up calling lives in this very process.
async function kubectl(args: string[], stdin?: string): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const r = await kubectlRun(join(rig.bin, "kubectl"), rig.clusters[0]!.kubeconfig, args, { stdin });
  return { stdout: r.out, stderr: r.err, exitCode: r.code };
}

type Pod = KubeObject & { spec: { nodeName?: string }; status?: { phase?: string } };

describe("kubelet API", () => {
  const romeCluster = () => rig.clusters.find((c) => c.name === "rome")!;
  const milanCluster = () => rig.clusters.find((c) => c.name === "milan")!;
  const mapping: Record<string, { remoteNamespace: string; remoteName: string }> = {
    "shop/web": { remoteNamespace: "shop-milan", remoteName: "web-remote" },
    "shop/ghost": { remoteNamespace: "shop-milan", remoteName: "no-such-pod" },
  };
  const asAdmin = (cluster = romeCluster()) => ({
    cert: readFileSync(cluster.pki.admin.cert),
    key: readFileSync(cluster.pki.admin.key),
    rejectUnauthorized: false,
  });

  beforeAll(async () => {
    const pki = romeCluster().pki;
    api = await createKubeletApi({
      remote: milan,
      resolvePod: (ns, name) => mapping[`${ns}/${name}`],
      tls: { cert: readFileSync(pki.kwokServing.cert), key: readFileSync(pki.kwokServing.key) },
      auth: { clientCA: readFileSync(pki.ca.cert) },
      host: "127.0.0.1",
      port: 0,
      nodeName: "liqo-milan-api",
    });
    const vn = virtualNodeFor("milan-api", milan, { nodeName: "liqo-milan-api", kubeletPort: api.port });
    await vn.start();

    await milan.create(Resources.namespaces, { metadata: { name: "shop-milan" } });
    await milan.create(Resources.pods, {
      metadata: { name: "web-remote", namespace: "shop-milan" },
      spec: { containers: [{ name: "app", image: "nginx" }] },
    });
    await waitFor(
      "the remote pod Running",
      async () => (await milan.get<Pod>(Resources.pods, "web-remote", "shop-milan")).status?.phase === "Running",
      { timeoutMs: 120_000 },
    );
    await rome.create(Resources.namespaces, { metadata: { name: "shop" } });
    for (const name of ["web", "ghost", "stray"]) {
      // Bound straight to the virtual node: the API server routes its logs and exec to our kubelet API.
      await rome.create(Resources.pods, {
        metadata: { name, namespace: "shop" },
        spec: {
          nodeName: "liqo-milan-api",
          tolerations: [VIRTUAL_NODE_TOLERATION],
          containers: [{ name: "app", image: "nginx" }],
        },
      });
    }
  }, 300_000);

  test("kubectl logs shows the remote container's log; --tail and --previous are passed through", async () => {
    const all = await kubectl(["logs", "-n", "shop", "web"]);
    expect(all.stdout).toContain("fake container of cluster milan started");
    expect(all.stdout).toContain("ready to serve");
    expect(all.exitCode).toBe(0);

    const tail = await kubectl(["logs", "-n", "shop", "web", "--tail=1"]);
    expect(tail.stdout.trim().split("\n").at(-1)).not.toContain("started");
    expect(tail.stdout.trim().split("\n")).toHaveLength(1);

    const previous = await kubectl(["logs", "-n", "shop", "web", "--previous"]);
    expect(previous.stdout).toContain("previous instance of the fake container of cluster milan");
    expect(previous.exitCode).toBe(0);

    const withTimes = await kubectl(["logs", "-n", "shop", "web", "--timestamps", "--tail=1"]);
    expect(withTimes.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z /);
  });

  test("kubectl logs --follow streams new lines, and a quiet stream is not cut", async () => {
    const proc = Bun.spawn(
      [
        join(rig.bin, "kubectl"),
        "--kubeconfig",
        romeCluster().kubeconfig,
        "logs",
        "-n",
        "shop",
        "web",
        "-f",
        "--tail=1",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    let seen = "";
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stdout) seen += decoder.decode(chunk, { stream: true });
    })();
    try {
      await waitFor("the first line", () => seen.length > 0, { timeoutMs: 30_000 });
      appendFileSync(milanCluster().fakeLogs.current, criLogLine("tick-1"));
      await waitFor("tick-1 streamed", () => seen.includes("tick-1"), { timeoutMs: 30_000, describe: () => seen });
      // Silence longer than any default idle timeout on the path (Bun's is 10s, Liqo's old
      // virtual kubelet cut at about as much): the assertion is that the stream is still open.
      const quietSince = Date.now();
      await waitFor(
        "15s of silence with the stream open",
        () => proc.exitCode === null && Date.now() - quietSince > 15_000,
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      appendFileSync(milanCluster().fakeLogs.current, criLogLine("tick-2"));
      await waitFor("tick-2 streamed", () => seen.includes("tick-2"), { timeoutMs: 30_000, describe: () => seen });
      expect(proc.exitCode).toBeNull();
    } finally {
      proc.kill();
      await reading.catch(() => {});
    }
  }, 120_000);

  test("kubectl exec runs the command in the remote pod with its output and exit status", async () => {
    const hi = await kubectl(["exec", "-n", "shop", "web", "--", "echo", "hi"]);
    expect(hi.stdout).toBe("hi\n");
    expect(hi.exitCode).toBe(0);

    // kwok reports a failed command as an internal error (exit 1 in kubectl), not as the command's
    // exit code; the virtual node must relay exactly what the provider's own exec gives.
    const script = "echo out; echo err >&2; exit 3";
    const failing = await kubectl(["exec", "-n", "shop", "web", "--", "sh", "-c", script]);
    const direct = Bun.spawn(
      [
        join(rig.bin, "kubectl"),
        "--kubeconfig",
        milanCluster().kubeconfig,
        "exec",
        "-n",
        "shop-milan",
        "web-remote",
        "--",
        "sh",
        "-c",
        script,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const directOut = await new Response(direct.stdout).text();
    expect(failing.stdout).toBe("out\n");
    expect(failing.stdout).toBe(directOut);
    expect(failing.stderr).toContain("err");
    expect(failing.stderr).toContain("exit status 3");
    expect(failing.exitCode).toBe(await direct.exited);
    expect(failing.exitCode).not.toBe(0);

    const missing = await kubectl(["exec", "-n", "shop", "web", "--", "no-such-command"]);
    expect(missing.stderr).toContain('exec: "no-such-command": executable file not found');
    expect(missing.exitCode).not.toBe(0);
  }, 60_000);

  test("kubectl exec -i passes stdin through", async () => {
    // kwok's exec never closes a command's stdin, so the command reads one line instead of to EOF.
    const read = await kubectl(
      ["exec", "-i", "-n", "shop", "web", "--", "sh", "-c", "read line; echo got:$line"],
      "piped through\n",
    );
    expect(read.stdout).toBe("got:piped through\n");
    expect(read.exitCode).toBe(0);
  }, 60_000);

  test("a pod this node does not run is a 404 that says so; a remote pod that is gone reports the remote's error", async () => {
    const res = await fetch(`${api!.url}/containerLogs/shop/stray/app`, { tls: asAdmin() } as RequestInit);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain("pod shop/stray is not running on this virtual node");
    const viaKubectl = await kubectl(["logs", "-n", "shop", "stray"]);
    expect(viaKubectl.exitCode).not.toBe(0);
    const gone = await fetch(`${api!.url}/containerLogs/shop/ghost/app`, { tls: asAdmin() } as RequestInit);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toMatch(/remote cluster: pods "no-such-pod" not found/);
    const exec = await kubectl(["exec", "-n", "shop", "stray", "--", "echo", "hi"]);
    expect(exec.stdout).toBe("");
    expect(exec.exitCode).not.toBe(0);
    const badQuery = await fetch(`${api!.url}/containerLogs/shop/web/app?tailLines=ten`, {
      tls: asAdmin(),
    } as RequestInit);
    expect(badQuery.status).toBe(400);
    expect(await badQuery.text()).toContain('tailLines="ten" must be a non-negative integer');
  });

  test("callers without a client certificate from the cluster CA are refused", async () => {
    const none = await fetch(`${api!.url}/containerLogs/shop/web/app`, {
      tls: { rejectUnauthorized: false },
    } as RequestInit);
    expect(none.status).toBe(401);
    expect(await none.text()).toContain("a client certificate signed by the cluster CA is required");
    const foreign = await fetch(`${api!.url}/healthz`, { tls: asAdmin(milanCluster()) } as RequestInit);
    expect(foreign.status).toBe(401);
    const ok = await fetch(`${api!.url}/healthz`, { tls: asAdmin() } as RequestInit);
    expect(await ok.text()).toBe("ok");
    expect(api!.stats.unauthorized).toBeGreaterThanOrEqual(2);
  });

  test("/stats/summary and /metrics/resource say metrics are not available instead of reporting zeros", async () => {
    for (const path of ["/stats/summary", "/metrics/resource"]) {
      const res = await fetch(`${api!.url}${path}`, { tls: asAdmin() } as RequestInit);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain(`${path} is not available on virtual node liqo-milan-api`);
    }
  });
});
