// Real nodes in the rig: containers run, pods of a cluster reach each other across its nodes, the
// cluster DNS resolves Services, two clusters with the same pod CIDR coexist on one bridge, kwok
// nodes sit next to real ones, and `rig down` leaves nothing on the machine.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";
import { appDeployment } from "../support/deployment.ts";
import { pullError } from "../support/pull-error.ts";
import { waitFor } from "../support/wait.ts";
import { rigImageRefs } from "./images.ts";
import { leftovers } from "./nodes.ts";
import { registryUrl } from "./registry.ts";
import { overlappingPodCidr, rigProcesses, startRigRegistry, stopRigRegistry } from "./rig.ts";
import { startTestRig, type TestRig } from "./testing.ts";

let rig: TestRig;
const hello = rigImageRefs.hello;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, realNodes: 2, nodes: 1, overlappingPodCidrs: true });
}, 900_000);

afterAll(async () => {
  if (rig) await rig.down().catch(() => {});
});

async function kubectl(cluster: string, ...args: string[]): Promise<{ out: string; err: string; code: number }> {
  const kubeconfig = rig.clusters.find((c) => c.name === cluster)!.kubeconfig;
  const proc = Bun.spawn([join(rig.bin, "kubectl"), `--kubeconfig=${kubeconfig}`, ...args], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { out, err, code: await proc.exited };
}

type PodObject = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string; podIP?: string } };

function helloPod(name: string, node: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: name } },
    spec: {
      nodeName: node,
      containers: [{ name: "web", image: hello, imagePullPolicy: "Never", ports: [{ containerPort: 80 }] }],
    },
  } as KubeObject;
}

async function runningPod(cluster: string, name: string): Promise<PodObject> {
  const client = rig.client(cluster);
  return waitFor(
    `${cluster}/${name} Running with an IP`,
    async () => {
      const p = await client.find<PodObject>(Resources.pods, name, "default");
      return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
    },
    {
      timeoutMs: 180_000,
      describe: async () => (await client.find<PodObject>(Resources.pods, name, "default"))?.status,
    },
  );
}

describe("a rig with real nodes", () => {
  test("both clusters have two Ready real nodes and a kwok node, on the same pod CIDR", async () => {
    for (const c of rig.clusters) {
      expect(c.podCIDR).toBe(overlappingPodCidr);
      const { out } = await kubectl(
        c.name,
        "get",
        "nodes",
        "--no-headers",
        "-o",
        "custom-columns=NAME:.metadata.name,VERSION:.status.nodeInfo.kubeletVersion,READY:.status.conditions[?(@.type=='Ready')].status",
      );
      const rows = out
        .trim()
        .split("\n")
        .map((l) => l.trim().split(/\s+/));
      expect(rows).toContainEqual([`${c.name}-node-1`, "v1.34.4", "True"]);
      expect(rows).toContainEqual([`${c.name}-node-2`, "v1.34.4", "True"]);
      expect(rows).toContainEqual([`${c.name}-worker-1`, "fake", "True"]);
    }
  });

  test("pods on two nodes of one cluster reach each other; the Service resolves by DNS name", async () => {
    for (const c of rig.clusters) {
      const client = rig.client(c.name);
      await client.create(Resources.pods, helloPod("server", `${c.name}-node-2`));
      await client.create(Resources.pods, helloPod("client", `${c.name}-node-1`));
      await client.create(Resources.services, {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "hello", namespace: "default" },
        spec: { selector: { app: "server" }, ports: [{ port: 8080, targetPort: 80 }] },
      } as KubeObject);
    }
    for (const c of rig.clusters) {
      const server = await runningPod(c.name, "server");
      await runningPod(c.name, "client");
      const direct = await kubectl(
        c.name,
        "exec",
        "client",
        "--",
        "curl",
        "-sS",
        "--max-time",
        "10",
        `http://${server.status!.podIP}/`,
      );
      expect(direct.err).toBe("");
      expect(direct.out).toContain("Server name: server");
      const byName = await waitFor(
        `${c.name}: hello.default.svc.cluster.local answers`,
        async () => {
          const r = await kubectl(
            c.name,
            "exec",
            "client",
            "--",
            "curl",
            "-sS",
            "--max-time",
            "5",
            "http://hello.default.svc.cluster.local:8080/",
          );
          return r.code === 0 ? r : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(byName.out).toContain("Server name: server");
      // The Service's only endpoint is the caller itself (hairpin through the node's bridge).
      // Each node's kube-proxy programs the Service on its own time: wait for the server's node.
      const hairpin = await waitFor(
        `${c.name}: the server reaches itself through its Service`,
        async () => {
          const r = await kubectl(
            c.name,
            "exec",
            "server",
            "--",
            "curl",
            "-sS",
            "--max-time",
            "5",
            "http://hello:8080/",
          );
          return r.code === 0 ? r : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(hairpin.out).toContain("Server name: server");
    }
  }, 600_000);

  test("each API server reaches its own cluster's pods (pod proxy), with the same pod CIDR in both", async () => {
    for (const c of rig.clusters) {
      const r = await kubectl(
        c.name,
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/server:80/proxy/via-the-api-server",
      );
      expect(r.err).toBe("");
      expect(r.out).toContain("Server name: server");
      expect(r.out).toContain("URI: /via-the-api-server");
    }
  });

  test("a pod reaches its cluster's API server through the kubernetes Service", async () => {
    const c = rig.clusters[0]!;
    const r = await kubectl(
      c.name,
      "exec",
      "client",
      "--",
      "sh",
      "-c",
      'curl -sS --max-time 10 --cacert /var/run/secrets/kubernetes.io/serviceaccount/ca.crt -H "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" https://kubernetes.default.svc/version',
    );
    expect(r.err).toBe("");
    expect(JSON.parse(r.out).gitVersion).toBe("v1.34.4");
  });

  test("logs and exec reach the real container through the API server", async () => {
    const c = rig.clusters[1]!;
    await kubectl(c.name, "exec", "client", "--", "curl", "-s", "http://127.0.0.1/from-the-test");
    const logs = await waitFor(
      "the access line in kubectl logs",
      async () => {
        const r = await kubectl(c.name, "logs", "client");
        return r.out.includes("/from-the-test") ? r.out : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(logs).toContain("GET /from-the-test");
  });

  test("an image no node has and no registry serves shows as a pull error on the pod", async () => {
    const c = rig.clusters[0]!;
    const client = rig.client(c.name);
    await client.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "ghost", namespace: "default" },
      spec: {
        nodeName: `${c.name}-node-1`,
        containers: [{ name: "x", image: "example.invalid/nothing:1", imagePullPolicy: "IfNotPresent" }],
      },
    } as KubeObject);
    const waiting = await waitFor(
      "a pull error",
      async () => pullError(await client.find<Pod>(Resources.pods, "ghost", "default")),
      { timeoutMs: 120_000 },
    );
    expect(waiting.message).toContain("example.invalid/nothing:1");
  }, 180_000);

  test("`image: nginx` (no tag: pull policy Always) runs on real nodes, pulled from the rig's registry", async () => {
    const c = rig.clusters[1]!;
    const client = rig.client(c.name);
    await client.create(
      Resources.deployments,
      appDeployment({
        name: "nginx",
        namespace: "default",
        replicas: 2,
        podSpec: { nodeSelector: { type: "real" }, containers: [{ name: "nginx", image: "nginx" }] },
      }),
    );
    const pods = await waitFor(
      "both nginx pods Running",
      async () => {
        const list = (await client.list<Pod>(Resources.pods, { namespace: "default", labelSelector: "app=nginx" }))
          .items;
        return list.length === 2 && list.every((p) => p.status?.phase === "Running") ? list : undefined;
      },
      {
        timeoutMs: 180_000,
        describe: async () =>
          (await client.list<Pod>(Resources.pods, { namespace: "default", labelSelector: "app=nginx" })).items.map(
            (p) => p.status,
          ),
      },
    );
    // The nodes were given the hello image by import only: the nginx name came from the registry.
    const head = await fetch(`${registryUrl(rig.registry!)}/v2/docker.io/library/nginx/manifests/latest`, {
      method: "HEAD",
      headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    });
    const digest = head.headers.get("docker-content-digest");
    expect(digest).toStartWith("sha256:");
    for (const p of pods) {
      expect(p.spec?.nodeName).toStartWith(`${c.name}-node-`);
      expect(p.status?.containerStatuses?.[0]?.imageID).toBe(`docker.io/library/nginx@${digest}`);
    }
  }, 300_000);

  test("with the registry down a pull fails naming the registry's address; back up, the pod runs", async () => {
    const c = rig.clusters[0]!;
    const client = rig.client(c.name);
    const address = rig.registry!.address;
    await stopRigRegistry(rig);
    try {
      await client.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "pull-always", namespace: "default" },
        spec: {
          nodeName: `${c.name}-node-2`,
          containers: [{ name: "web", image: rigImageRefs.hello, imagePullPolicy: "Always" }],
        },
      } as KubeObject);
      const pod = () => client.find<Pod>(Resources.pods, "pull-always", "default");
      const waiting = await waitFor("a pull error naming the registry", async () => pullError(await pod(), address), {
        timeoutMs: 120_000,
        describe: async () => (await pod())?.status,
      });
      expect(waiting.message).toContain(rigImageRefs.hello);
    } finally {
      await startRigRegistry(rig);
    }
    await runningPod(c.name, "pull-always");
  }, 300_000);

  test("rig down leaves no process, namespace, cgroup, mount, bridge or directory", async () => {
    const nodes = rig.clusters.flatMap((c) => c.realNodeStates ?? []);
    expect(nodes.length).toBe(4);
    const procs = rigProcesses(rig);
    const bridge = rig.network!.bridge;
    await rig.down();
    for (const n of nodes) expect(leftovers(n)).toEqual([]);
    expect(
      procs.filter((p) => existsSync(`/proc/${p.pid}`) && !readFileSync(`/proc/${p.pid}/stat`, "utf8").includes(") Z")),
    ).toEqual([]);
    const links = Bun.spawnSync(["ip", "-o", "link", "show"]).stdout.toString();
    expect(links).not.toContain(`${bridge}:`);
    expect(links).not.toContain(`lrig${rig.network!.index}v`);
    const netns = Bun.spawnSync(["ip", "netns", "list"]).stdout.toString();
    expect(netns).not.toContain(`lrig${rig.network!.index}-`);
    const rules = Bun.spawnSync(["ip", "rule", "list"]).stdout.toString();
    for (const c of rig.clusters) {
      expect(rules).not.toContain(`uidrange ${c.hostRouting!.uid}-`);
      expect(Bun.spawnSync(["ip", "route", "show", "table", String(c.hostRouting!.table)]).stdout.toString()).toBe("");
    }
    const mounts = readFileSync("/proc/self/mountinfo", "utf8");
    expect(mounts).not.toContain(rig.dir);
    expect(existsSync(rig.dir)).toBe(false);
    rig = undefined as unknown as TestRig;
    // Generous: this test asserts what is left behind, and a loaded machine stops processes slowly
    // (a slow phase is reported on stderr by the rig's PhaseClock).
  }, 600_000);
});
