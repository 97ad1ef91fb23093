// The real nodes' containerd stores (node-store.ts) without a rig: a store built once from two small
// archives by a real containerd, reused after, copied into two node folders whose containerd lists
// every image and unpacked it (a file capability included); a copy missing an image, a broken
// archive and a second seed into the same folder each fail with an error that names the fix.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeLayer, writeOciArchive } from "../../scripts/oci-archive.ts";
import { containerdConfig, containerdRoot } from "./node-config.ts";
import { checkNodeImages, ensureNodeStore, type NodeStore, seedNodeStore, storeKey } from "./node-store.ts";

const tmp = mkdtempSync(join(tmpdir(), "rig-node-store-"));
const stores = join(tmp, "stores");
const refs = ["ghcr.io/liqo-bun/store-test-a:1", "ghcr.io/liqo-bun/store-test-b:1"];
const archives: string[] = [];
const running: ReturnType<typeof Bun.spawn>[] = [];

/** An archive of one image whose layer holds `file` (setcap'd when `cap` is given). */
async function archiveOf(ref: string, file: string, cap?: string): Promise<string> {
  const stage = join(tmp, `stage-${archives.length}`);
  mkdirSync(stage);
  writeFileSync(join(stage, file), `${ref}\n`);
  if (cap) expect(Bun.spawnSync(["setcap", cap, join(stage, file)]).exitCode).toBe(0);
  const layer = await makeLayer(stage, join(tmp, `layer-${archives.length}.tar.gz`), { comment: file });
  const out = join(tmp, `image-${archives.length}.oci.tar`);
  await writeOciArchive({
    out,
    work: join(tmp, `work-${archives.length}`),
    ref,
    layers: [layer],
    config: { user: "0:0", workingDir: "/", entrypoint: ["/bin/true"], env: [], labels: {} },
  });
  return out;
}

/** containerd on a node folder, as the rig configures it; its socket once it answers. */
async function startContainerd(nodeDir: string): Promise<string> {
  const socket = join(nodeDir, "containerd.sock");
  const config = join(nodeDir, "containerd.toml");
  mkdirSync(join(nodeDir, "cni"), { recursive: true });
  writeFileSync(
    config,
    containerdConfig(
      { dir: nodeDir, socket, cniConfDir: join(nodeDir, "cni"), cniBinDir: join(nodeDir, "cni") },
      "none",
    ),
  );
  const p = Bun.spawn(["containerd", "--config", config], {
    stdout: Bun.file(join(nodeDir, "log")),
    stderr: Bun.file(join(nodeDir, "log")),
  });
  running.push(p);
  const deadline = Date.now() + 30_000;
  while (
    Bun.spawnSync(["ctr", "--address", socket, "version"], { stdout: "ignore", stderr: "ignore" }).exitCode !== 0
  ) {
    if (Date.now() > deadline || p.exitCode !== null) throw new Error(`containerd in ${nodeDir} did not answer`);
    await Bun.sleep(100);
  }
  return socket;
}

const ctr = (socket: string, ...args: string[]) => {
  const r = Bun.spawnSync(["ctr", "--address", socket, "-n", "k8s.io", ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

beforeAll(async () => {
  archives.push(await archiveOf(refs[0]!, "a.txt", "cap_net_admin+ep"));
  archives.push(await archiveOf(refs[1]!, "b.txt"));
}, 60_000);

afterAll(async () => {
  for (const p of running) p.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
  rmSync(tmp, { recursive: true, force: true });
});

describe("a real node's containerd store, copied from one built once", () => {
  let store: NodeStore;

  test("built once per set of archives: two rigs asking at once get one build; a third asking later reuses it", async () => {
    const said: string[] = [];
    const say = (m: string) => said.push(m);
    const [a, b] = await Promise.all([ensureNodeStore(archives, say, stores), ensureNodeStore(archives, say, stores)]);
    expect(a).toEqual(b);
    expect(said.filter((m) => m.startsWith("containerd store with 2 images"))).toHaveLength(1);
    store = a;
    expect(store.refs.sort()).toEqual(refs);
    const again = await ensureNodeStore([...archives].reverse(), say, stores);
    expect(again.root).toBe(store.root);
    expect(said.filter((m) => m.startsWith("containerd store"))).toHaveLength(1);
    // The store alone: no work folder or lock left behind.
    expect(readdirSync(stores)).toEqual([store.root.split("/").at(-1)!]);
    // Another containerd version or set of archives is another store.
    expect(storeKey(archives, "containerd 9.9.9")).not.toBe(storeKey(archives, "containerd 1.7.24"));
    expect(storeKey(archives.slice(0, 1), "v")).not.toBe(storeKey(archives, "v"));
  }, 120_000);

  test("copied into two nodes: each containerd lists both images, unpacked, the file capability kept", async () => {
    for (const n of ["node-1", "node-2"]) {
      const dir = join(tmp, n);
      await seedNodeStore(store, dir);
      const socket = await startContainerd(dir);
      await checkNodeImages(socket, store);
      // Unpacked for overlayfs: the layers are committed snapshots, so a pod starts without a pull.
      const view = ctr(socket, "snapshots", "--snapshotter", "overlayfs", "ls");
      expect({ code: view.code, committed: view.out.includes("Committed") }).toEqual({ code: 0, committed: true });
      const snapshots = join(containerdRoot(dir), "io.containerd.snapshotter.v1.overlayfs", "snapshots");
      const files = Bun.spawnSync(["getcap", "-r", snapshots], { stdout: "pipe" }).stdout.toString();
      expect(files).toMatch(/\/fs\/a\.txt (cap_net_admin=ep|= cap_net_admin\+ep)/);
    }
  }, 120_000);

  test("a copy that lacks an image is refused, naming the image and the store to delete", async () => {
    const dir = join(tmp, "node-3");
    await seedNodeStore(store, dir);
    const socket = await startContainerd(dir);
    expect(ctr(socket, "images", "rm", refs[1]!).code).toBe(0);
    await expect(checkNodeImages(socket, store)).rejects.toThrow(
      `the containerd at ${socket}, copied from ${store.root}, lists no ${refs[1]}: delete ${store.root} (the next rig rebuilds it)`,
    );
  }, 120_000);

  test("seeding a folder that already holds a store is refused: two stores are never mixed", async () => {
    await expect(seedNodeStore(store, join(tmp, "node-1"))).rejects.toThrow(
      `node store ${containerdRoot(join(tmp, "node-1"))} exists already`,
    );
  });

  test("a broken archive: the error names it, no store is kept, and the next call tries again", async () => {
    const broken = join(tmp, "broken.oci.tar");
    writeFileSync(broken, "not a tar archive");
    const set = [archives[0]!, broken];
    await expect(ensureNodeStore(set, () => {}, stores)).rejects.toThrow(broken);
    const key = storeKey(set, Bun.spawnSync(["containerd", "--version"]).stdout.toString().trim());
    expect(existsSync(join(stores, key))).toBe(false);
    expect(readdirSync(stores).filter((f) => f.startsWith("work-"))).toEqual([]);
    await expect(ensureNodeStore(set, () => {}, stores)).rejects.toThrow(broken);
  }, 120_000);
});
