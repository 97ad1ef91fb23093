// A real node's containerd store, filled before containerd starts by copying a store the rig's images
// were imported into once, instead of importing them into every node.
//
// Why: `ctr images import` gunzips and unpacks every layer (about 0.2 GB packed, 0.65 GB unpacked for
// the rig's images): about 10 CPU-s of containerd per node, 40 of the 88 CPU-s of the 4-node quick
// start. Copying the unpacked store costs under 2 CPU-s. The store is built once per set of image
// archives (the liqo archive changes with the code, so once per checkout state) and kept in the
// image cache; the newest few are kept, the rest pruned like the archives.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { RigError } from "./errors.ts";
import { archiveRefs, imageCacheDir, importImages, listedImages, withLock } from "./images.ts";
import { containerdConfig, containerdRoot } from "./node-config.ts";
import { isAlive } from "./process.ts";

/** containerd's own layout, which the copy must match: the version is part of the key. */
function containerdVersion(): string {
  const r = Bun.spawnSync(["containerd", "--version"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new RigError("containerd --version failed: is containerd installed? (scripts/setup.sh installs it)");
  return r.stdout.toString().trim();
}

/** The folder a store for these archives lives in: one per containerd version and set of archives. */
export function storeKey(archives: string[], version: string): string {
  const h = new Bun.CryptoHasher("sha256").update(version);
  // The rig's archives name their content's hash; the size guards a hand-made archive reusing a name.
  for (const a of archives.map((a) => `${basename(a)} ${statSync(a).size}`).sort()) h.update(`\n${a}`);
  return h.digest("hex").slice(0, 16);
}

/** A containerd store (its root folder) and the image names it holds. */
export interface NodeStore {
  root: string;
  refs: string[];
}

/**
 * A containerd store holding every image of `archives`, unpacked for the overlayfs snapshotter,
 * built on first use (one import, about 15 s) and reused after.
 */
export async function ensureNodeStore(
  archives: string[],
  say: (m: string) => void,
  stores = join(imageCacheDir(), "stores"),
): Promise<NodeStore> {
  mkdirSync(stores, { recursive: true });
  const store = join(stores, storeKey(archives, containerdVersion()));
  if (!existsSync(store)) {
    await withLock(stores, say, async () => {
      if (existsSync(store)) return; // built by whoever held the lock before us
      const started = performance.now();
      const work = join(stores, `work-${process.pid}`);
      rmSync(work, { recursive: true, force: true });
      try {
        await importIntoNewStore(work, archives);
        renameSync(containerdRoot(work), store);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
      say(
        `containerd store with ${archives.length} images: ${store} in ${((performance.now() - started) / 1000).toFixed(1)}s`,
      );
      pruneStores(stores);
    });
  }
  // Marked as used: pruning spares a store used in the last 20 minutes (another checkout's rig may
  // be about to copy it).
  const now = new Date();
  utimesSync(store, now, now);
  return { root: store, refs: (await Promise.all(archives.map(archiveRefs))).flat() };
}

/** A containerd of its own in `work`, the archives imported, stopped cleanly (its databases closed). */
async function importIntoNewStore(work: string, archives: string[]): Promise<void> {
  const socket = join(work, "containerd.sock");
  const config = join(work, "containerd.toml");
  mkdirSync(join(work, "cni"), { recursive: true });
  await Bun.write(
    config,
    containerdConfig({ dir: work, socket, cniConfDir: join(work, "cni"), cniBinDir: join(work, "cni") }, "none"),
  );
  const log = join(work, "containerd.log");
  const proc = Bun.spawn(["containerd", "--config", config], { stdout: Bun.file(log), stderr: Bun.file(log) });
  const fail = async (what: string): Promise<never> => {
    proc.kill("SIGKILL");
    await proc.exited;
    const tail = existsSync(log) ? (await Bun.file(log).text()).trim().slice(-1500) : "(no log)";
    throw new RigError(
      `building the rig's containerd store in ${work}: ${what}\n--- containerd log (tail) ---\n${tail}`,
    );
  };
  const deadline = Date.now() + 30_000;
  while (!existsSync(socket)) {
    if (proc.exitCode !== null || Date.now() > deadline) await fail("containerd did not open its socket");
    await Bun.sleep(100);
  }
  try {
    await importImages(socket, archives);
  } catch (err) {
    await fail((err as Error).message);
  }
  proc.kill("SIGTERM");
  const stopped = await Promise.race([proc.exited, Bun.sleep(30_000).then(() => undefined)]);
  if (stopped === undefined || isAlive(proc.pid)) await fail("containerd did not stop within 30s of SIGTERM");
}

/** Keeps the newest two stores and any used in the last 20 minutes (each about 0.9 GB). */
function pruneStores(stores: string, keep = 2): void {
  const old = readdirSync(stores)
    .filter((f) => /^[0-9a-f]{16}$/.test(f))
    .map((f) => ({ f, t: statSync(join(stores, f)).mtimeMs }))
    .sort((a, b) => b.t - a.t)
    .slice(keep);
  for (const { f, t } of old)
    if (Date.now() - t > 20 * 60_000) rmSync(join(stores, f), { recursive: true, force: true });
}

/**
 * A node's store as a copy of `store`, before its containerd starts: cp -a, which keeps owners,
 * modes, device files and extended attributes (overlayfs whiteouts and opaque folders).
 */
export async function seedNodeStore(store: NodeStore, nodeDir: string): Promise<void> {
  const root = containerdRoot(nodeDir);
  if (existsSync(root)) throw new RigError(`node store ${root} exists already: seeding would mix two stores`);
  mkdirSync(dirname(root), { recursive: true });
  const p = Bun.spawn(["cp", "-a", store.root, root], { stdout: "ignore", stderr: "pipe" });
  const err = await new Response(p.stderr).text();
  if ((await p.exited) !== 0)
    throw new RigError(`copying the containerd store ${store.root} to ${root}: ${err.trim()}`);
}

/** Every image of the store is listed by the containerd at `socket`: a copied store is checked, not trusted. */
export async function checkNodeImages(socket: string, store: NodeStore): Promise<void> {
  const listed = await listedImages(socket);
  const absent = store.refs.filter((r) => !listed.has(r));
  if (absent.length)
    throw new RigError(
      `the containerd at ${socket}, copied from ${store.root}, lists no ${absent.join(", ")}: delete ${store.root} (the next rig rebuilds it)`,
    );
}
