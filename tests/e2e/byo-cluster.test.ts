// Liqo on clusters that are not set up for it, as docs/byo-cluster.md tells a user to install it:
// the rig's foreign profile (Pod Security baseline enforced by the API server, nodes whose
// interface is ens5, every image pulled from a registry, none imported; a kubeconfig naming the
// API server's reachable address), the liqo image pushed under the user's own repository name,
// installed with the compiled liqoctl and only the page's flags, peered, and `liqoctl test network`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";
import { buildLiqoctl, hostTarget } from "../../scripts/build-liqoctl.ts";
import { ensureImages } from "../rig/images.ts";
import { pushArchive } from "../rig/oci-push.ts";
import { mirroredHosts, registryUrl, writeMirrorHosts } from "../rig/registry.ts";
import { killRigNow, reapOrphanRigs, rigDown, rigUp, type Rig } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { run } from "./liqoctl-run.ts";

const USER_REGISTRY = "registry.acme.internal";
const tmp = mkdtempSync(join(tmpdir(), "byo-cluster-"));
let rig: Rig;
let binary: string;
let userImage: string;
const client: Record<string, KubeClient> = {};
type Cluster = Rig["clusters"][number];
const cluster = (name: string) => rig.clusters.find((c) => c.name === name)!;
const say = (m: string) => console.log(`[byo] ${m}`);

async function liqoctl(args: string[], what: string): Promise<string> {
  const r = await run([binary, ...args]);
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

/** docs/byo-cluster.md's install line for a generic cluster, with nothing the page does not show. */
const installArgs = (c: Cluster) => [
  "install",
  "generic",
  `--kubeconfig=${c.kubeconfig}`,
  `--cluster-name=${c.name}`,
  `--pod-cidr=${c.podCIDR}`,
  `--service-cidr=${c.serviceCIDR}`,
  `--reserved-subnets=${rig.network!.prefix}.0/24`,
  `--set=image.repository=${userImage.slice(0, userImage.lastIndexOf(":"))}`,
  "--timeout=10m",
];

beforeAll(async () => {
  await reapOrphanRigs(testRigRoot);
  const dir = mkdtempSync(join(testRigRoot, "byo-"));
  process.on("exit", () => {
    if (rig) killRigNow(rig);
  });
  const [up, built, images] = await Promise.all([
    rigUp({
      clusters: 2,
      names: ["rome", "milan"],
      realNodes: 1,
      foreign: true,
      dir,
      owner: process.pid,
      progress: say,
    }),
    buildLiqoctl(hostTarget(), join(tmp, "dist")),
    ensureImages(["liqo"], say),
  ]);
  rig = up;
  binary = built;
  for (const c of rig.clusters) client[c.name] = createKubeClient({ kubeconfig: c.kubeconfig });
  // The user's registry: the rig's, answering for registry.acme.internal like any mirrored host.
  userImage = `${USER_REGISTRY}/platform/liqo:${images[0]!.ref.split(":").pop()}`;
  writeMirrorHosts(rig.registry!, [...mirroredHosts(), USER_REGISTRY]);
  await pushArchive({ archive: images[0]!.archive, registry: registryUrl(rig.registry!), names: [userImage] });
}, 900_000);

afterAll(async () => {
  if (rig) await rigDown(rig.dir).catch(() => killRigNow(rig));
  rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe("the rig's foreign profile behaves like someone else's cluster", () => {
  test("the API server enforces Pod Security baseline: a privileged pod is refused in a plain namespace, naming the rule", async () => {
    const err = await client
      .rome!.create(Resources.pods, {
        metadata: { name: "privileged", namespace: "default" },
        spec: {
          containers: [{ name: "c", image: "ghcr.io/liqo-bun/hello:0.1.0", securityContext: { privileged: true } }],
        },
      })
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(err?.message).toContain('violates PodSecurity "baseline:latest"');
  });

  test("nodes' interface is ens5, not eth0; the kubeconfig names the API server at the bridge address", () => {
    for (const c of rig.clusters) {
      const node = c.realNodeStates![0]!;
      const links = Bun.spawnSync(["ip", "-n", node.netns, "-o", "link", "show"]).stdout.toString();
      expect(links).toContain(": ens5@");
      expect(links).not.toContain(": eth0@");
    }
    const kc = readFileSync(cluster("rome").kubeconfig, "utf8");
    expect(kc).toContain(`server: https://${rig.network!.gateway}:${cluster("rome").ports.apiserver}`);
  });
});

describe("liqo from the docs alone, with the compiled liqoctl", () => {
  test("installed with the page's flags from the user's repository: every liqo pod runs that image, the namespace is labelled privileged, the route agents found ens5", async () => {
    await Promise.all(rig.clusters.map((c) => liqoctl(installArgs(c), `liqoctl install (${c.name})`)));
    for (const c of rig.clusters) {
      const pods = (await client[c.name]!.list<Pod>(Resources.pods, { namespace: "liqo" })).items;
      expect(pods.length).toBeGreaterThan(0);
      for (const p of pods) expect(p.spec?.containers?.map((x) => x.image)).toEqual([userImage]);
      const ns = await client[c.name]!.get<KubeObject>(Resources.namespaces, "liqo");
      expect(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("privileged");
      const route = pods.find((p) => p.metadata.labels?.["app.kubernetes.io/name"] === "liqo-route")!;
      const logs = await run([
        join(rig.bin, "kubectl"),
        `--kubeconfig=${c.kubeconfig}`,
        "logs",
        "-n",
        "liqo",
        route.metadata.name!,
      ]);
      expect(logs.stdout + logs.stderr).toContain("ens5");
    }
    say(`liqo installed in both clusters from ${userImage}`);
  }, 1_200_000);

  test("peered out-of-band with the printed command; liqoctl test network passes every check", async () => {
    const printed = await liqoctl(
      ["generate", "peer-command", "--only-command", `--kubeconfig=${cluster("milan").kubeconfig}`],
      "liqoctl generate peer-command (milan)",
    );
    const line = printed
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l.startsWith("liqoctl peer out-of-band "));
    expect(line).toBeDefined();
    await liqoctl(
      [...line!.split(/\s+/).slice(1), `--kubeconfig=${cluster("rome").kubeconfig}`, "--timeout=600s"],
      "liqoctl peer out-of-band milan (rome)",
    );
    await waitFor(
      "rome's virtual node for milan Ready",
      async () =>
        (
          await client.rome!.list<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
            Resources.nodes,
            { labelSelector: "liqo.io/type=virtual-node" },
          )
        ).items.some((n) => n.status?.conditions?.some((k) => k.type === "Ready" && k.status === "True")),
      { timeoutMs: 180_000 },
    );
    const out = await liqoctl(
      ["test", "network", `--kubeconfig=${cluster("rome").kubeconfig}`],
      "liqoctl test network (rome)",
    );
    say(out);
    expect(out).toMatch(/all \d+ checks passed/);
  }, 900_000);

  test("an image the nodes cannot pull: the install stops naming the pod, the image and the fix, long before --timeout; the release and the peering stay as they were", async () => {
    const rome = cluster("rome");
    const missing = `${USER_REGISTRY}/platform/missing`;
    const started = performance.now();
    const r = await run([binary, ...installArgs(rome), `--set=image.repository=${missing}`]);
    const seconds = (performance.now() - started) / 1000;
    say(`install with an unpullable image: exit ${r.code} after ${seconds.toFixed(0)} s (--timeout 10m)`);
    const out = r.stdout + r.stderr;
    expect(r.code).toBe(1);
    expect(out).toContain("liqo upgrade stopped: an image cannot be pulled; Helm rolled it back");
    expect(out).toMatch(
      new RegExp(`pod liqo/\\S+ cannot pull image ${missing}:\\S+ \\((ErrImagePull|ImagePullBackOff)`),
    );
    expect(out).toContain("--set image.repository=<registry>/<path>/liqo");
    expect(out).toContain("the release keeps the values it had");
    expect(out).not.toContain("not ready within --timeout");
    // Helm's rollback: every liqo pod back on the user's image, Ready, and the peering carries on.
    await waitFor(
      "rome's liqo pods all on the user's image again, Ready",
      async () => {
        const pods = (await client.rome!.list<Pod>(Resources.pods, { namespace: "liqo" })).items;
        return (
          pods.length > 0 &&
          pods.every(
            (p) =>
              p.spec?.containers?.every((c) => c.image === userImage) &&
              p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          )
        );
      },
      { timeoutMs: 300_000 },
    );
    const out2 = await liqoctl(
      ["test", "network", "--basic", `--kubeconfig=${rome.kubeconfig}`],
      "liqoctl test network --basic (rome, after the stopped upgrade)",
    );
    expect(out2).toMatch(/all \d+ checks passed/);
  }, 900_000);
});
