// The images the rig's real nodes run, built on this machine (no container engine, no registry)
// as OCI archives and imported into each node's containerd:
//   registry.k8s.io/pause:3.10       the sandbox: images/pause.c, gcc -static (containerd's sandbox_image)
//   ghcr.io/liqo-bun/hello:0.1.0     the workload: Debian + nginx answering images/hello-nginx.conf's page
//   ghcr.io/liqo-bun/coredns:<v>     the cluster DNS: the coredns binary build.sh built, alone
//   ghcr.io/liqo-bun/liqo:<version>  the project's image (scripts/build-image.ts), from this checkout
// and, only when a test asks for it (ensureImages; `rig up` does not import it):
//   ghcr.io/liqo-bun/postgres:15     the stateful tutorial's database: Debian's postgresql-15 and
//                                    images/postgres-entrypoint.sh (primary or streaming standby)
//   ghcr.io/liqo-bun/prometheus:2.42 a real Prometheus scraping liqo (tests/e2e/prometheus.ts):
//                                    Debian's prometheus and images/prometheus-pod-sd.sh (pod
//                                    discovery: Debian builds Prometheus without kubernetes_sd)
// Each archive is cached under ~/.cache/liqo-bun/images as <name>-<key>.oci.tar, the key a hash of
// everything it is made of, so a change rebuilds it and nothing else does.
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { buildImage, dockerfileRuntime } from "../../scripts/build-image.ts";
import { DEBIAN_SUITE, debianRootfs, debianRootfsKey, RUNTIME_PATHS } from "../../scripts/debian-rootfs.ts";
import { makeLayer, writeOciArchive, type ImageConfig, type Layer } from "../../scripts/oci-archive.ts";
import { binaryCacheDir, rigVersions } from "./binaries.ts";
import { RigError } from "./errors.ts";
import { isAlive } from "./process.ts";

const repo = resolve(import.meta.dir, "../..");
const sources = join(import.meta.dir, "images");
const PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The workload image's packages: a web server plus the tools data-plane tests run inside pods. */
export const helloPackages = [
  "nginx-light",
  "curl",
  "iproute2",
  "iputils-ping",
  "netcat-openbsd",
  "dnsutils",
  "iperf3",
  "procps",
  "ca-certificates",
];

/** This checkout's version (package.json's): the liqo image's tag, and the version an upgrade goes to. */
export const checkoutVersion = () => JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version as string;

export const rigImageRefs = {
  pause: "registry.k8s.io/pause:3.10",
  hello: "ghcr.io/liqo-bun/hello:0.1.0",
  coredns: `ghcr.io/liqo-bun/coredns:${rigVersions().COREDNS_VERSION}`,
  liqo: `ghcr.io/liqo-bun/liqo:${checkoutVersion()}`,
} as const;
export type RigImage = keyof typeof rigImageRefs;

/** Images only some tests need: built on demand, imported by the test into its own rig's nodes. */
export const extraImageRefs = {
  postgres: "ghcr.io/liqo-bun/postgres:15",
  prometheus: "ghcr.io/liqo-bun/prometheus:2.42",
} as const;
export type ImageName = RigImage | keyof typeof extraImageRefs;
const imageRefs: Record<ImageName, string> = { ...rigImageRefs, ...extraImageRefs };

/** The database image's packages: PostgreSQL 15 (server and client tools) and what its entrypoint uses. */
export const postgresPackages = ["postgresql-15", "postgresql-client-15", "procps"];

/** The monitoring image's packages: bookworm's Prometheus (2.42), and what the pod discovery script uses. */
export const prometheusPackages = ["prometheus", "curl", "jq", "ca-certificates"];

export function imageCacheDir(env: Record<string, string | undefined> = process.env): string {
  return env.LIQO_RIG_IMAGES ?? join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), ".cache"), "liqo-bun", "images");
}

const hash = (...parts: (string | Uint8Array)[]) => {
  const h = new Bun.CryptoHasher("sha256");
  for (const p of parts) h.update(p).update("\0");
  return h.digest("hex").slice(0, 16);
};

async function run(cmd: string[], what: string, cwd = repo): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0)
    throw new RigError(`${what} failed (exit ${p.exitCode}): ${(err || out).trim().slice(-2000)}`);
  return out;
}

interface Recipe {
  name: ImageName;
  /** Everything the archive is made of; computing it must be cheap (no build). */
  key(): Promise<string>;
  build(o: { out: string; work: string; say: (m: string) => void }): Promise<void>;
}

/** A single-layer image from a staged directory: pause and coredns. */
async function singleLayerImage(o: {
  ref: string;
  stage: string;
  layer: string;
  comment: string;
  config: ImageConfig;
  out: string;
  work: string;
}): Promise<void> {
  const layer: Layer = await makeLayer(o.stage, o.layer, { comment: o.comment });
  await writeOciArchive({ out: o.out, layers: [layer], config: o.config, ref: o.ref, work: o.work });
}

const config = (c: Partial<ImageConfig> & { entrypoint: string[]; title: string }): ImageConfig => ({
  user: c.user ?? "0:0",
  workingDir: c.workingDir ?? "/",
  entrypoint: c.entrypoint,
  cmd: c.cmd,
  env: c.env ?? [PATH_ENV],
  labels: {
    "org.opencontainers.image.title": c.title,
    "org.opencontainers.image.source": "https://github.com/liqo-bun/liqo",
    ...c.labels,
  },
});

function pauseRecipe(): Recipe {
  const source = join(sources, "pause.c");
  const flags = ["-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror"];
  return {
    name: "pause",
    async key() {
      if (!Bun.which("gcc"))
        throw new RigError("gcc is not installed: the pause image is compiled here (apt-get install gcc libc6-dev)");
      return hash(readFileSync(source), flags.join(" "), await run(["gcc", "--version"], "gcc --version"));
    },
    async build({ out, work, say }) {
      say("pause image: gcc -static images/pause.c");
      const stage = join(work, "stage");
      mkdirSync(stage, { recursive: true });
      await run(["gcc", ...flags, "-o", join(stage, "pause"), source], "compiling images/pause.c");
      // Upstream's pause runs as 65535 too: nothing in a sandbox needs root.
      await singleLayerImage({
        ref: rigImageRefs.pause,
        stage,
        out,
        work,
        layer: join(work, "pause.tar.gz"),
        comment: "pause: images/pause.c, gcc -static",
        config: config({ title: "pause", entrypoint: ["/pause"], user: "65535:65535" }),
      });
    },
  };
}

function corednsRecipe(): Recipe {
  const binary = () => {
    const path = join(binaryCacheDir(), "bin", "coredns");
    if (!existsSync(path))
      throw new RigError(`the coredns binary is not built (${path}); run: bash tests/rig/build.sh`);
    return path;
  };
  return {
    name: "coredns",
    // Hashing the binary (~60 MB, a fraction of a second) rather than trusting its path: a rebuild
    // of the same version with other flags still makes a new image.
    key: async () => hash(new Uint8Array(await Bun.file(binary()).arrayBuffer()), rigImageRefs.coredns),
    async build({ out, work, say }) {
      say(`coredns image: ${binary()}`);
      const stage = join(work, "stage");
      mkdirSync(stage, { recursive: true });
      copyFileSync(binary(), join(stage, "coredns"));
      await singleLayerImage({
        ref: rigImageRefs.coredns,
        stage,
        out,
        work,
        layer: join(work, "coredns.tar.gz"),
        comment: `coredns ${rigVersions().COREDNS_VERSION} (go install, CGO_ENABLED=0)`,
        // The Corefile comes from the cluster's ConfigMap, mounted at /etc/coredns.
        config: config({ title: "coredns", entrypoint: ["/coredns"], cmd: ["-conf", "/etc/coredns/Corefile"] }),
      });
    },
  };
}

/** A Debian root file system with some packages (layer 1) and one file of images/ (layer 2). */
function debianImageRecipe(o: {
  name: ImageName;
  ref: string;
  cache: string;
  packages: string[];
  file: { source: string; dest: string; mode?: number };
  config: ImageConfig;
}): Recipe {
  const source = join(sources, o.file.source);
  return {
    name: o.name,
    key: async () => hash(debianRootfsKey(o.packages), readFileSync(source), o.ref),
    async build({ out, work, say }) {
      const base = await debianRootfs({ cache: o.cache, packages: o.packages, say });
      say(`${o.name} image: layer 1/2, the Debian root file system`);
      const rootfs = await makeLayer(base.dir, join(o.cache, "layers", `rootfs-${base.key}.tar.gz`), {
        comment: `debootstrap --variant=minbase ${DEBIAN_SUITE} + apt-get install ${o.packages.join(" ")}`,
        exclude: RUNTIME_PATHS,
      });
      say(`${o.name} image: layer 2/2, ${o.file.dest}`);
      const staged = join(work, "stage", o.file.dest);
      mkdirSync(dirname(staged), { recursive: true });
      copyFileSync(source, staged);
      if (o.file.mode !== undefined) chmodSync(staged, o.file.mode);
      const file = await makeLayer(join(work, "stage"), join(work, "file.tar.gz"), {
        comment: `COPY images/${o.file.source} ${o.file.dest}`,
      });
      await writeOciArchive({ out, work, ref: o.ref, layers: [rootfs, file], config: o.config });
    },
  };
}

const helloRecipe = (cache: string) =>
  debianImageRecipe({
    name: "hello",
    ref: rigImageRefs.hello,
    cache,
    packages: helloPackages,
    file: { source: "hello-nginx.conf", dest: "/etc/nginx/nginx.conf" },
    // Cmd rather than Entrypoint: a pod's `args` (or `kubectl run ... -- curl ...`) replaces it.
    config: config({ title: "hello", entrypoint: [], cmd: ["nginx", "-g", "daemon off;"] }),
  });

const postgresRecipe = (cache: string) =>
  debianImageRecipe({
    name: "postgres",
    ref: extraImageRefs.postgres,
    cache,
    packages: postgresPackages,
    file: { source: "postgres-entrypoint.sh", dest: "/usr/local/bin/postgres-entrypoint", mode: 0o755 },
    config: config({ title: "postgres", entrypoint: ["/usr/local/bin/postgres-entrypoint"] }),
  });

// As the upstream image (prom/prometheus) runs: the binary as entrypoint, the configuration and data
// paths as arguments a pod may replace, as nobody; the data directory is the pod's volume. The
// discovery script runs beside it, as a second container of the same image (its command).
const prometheusRecipe = (cache: string) =>
  debianImageRecipe({
    name: "prometheus",
    ref: extraImageRefs.prometheus,
    cache,
    packages: prometheusPackages,
    file: { source: "prometheus-pod-sd.sh", dest: "/usr/local/bin/prometheus-pod-sd", mode: 0o755 },
    config: config({
      title: "prometheus",
      entrypoint: ["/usr/bin/prometheus"],
      cmd: ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"],
      user: "65534:65534",
    }),
  });

/**
 * What the liqo image is built from, cheaply: the index (every tracked file's blob hash), the
 * working tree's changes to it, and the untracked files with their sizes and times.
 */
export async function checkoutKey(): Promise<string> {
  const [index, diff, untracked] = await Promise.all([
    run(["git", "ls-files", "-s"], "git ls-files -s"),
    run(["git", "diff", "--binary"], "git diff"),
    run(["git", "ls-files", "-z", "--others", "--exclude-standard"], "git ls-files --others"),
  ]);
  const stamps = untracked
    .split("\0")
    .filter(Boolean)
    .map((p) => {
      const s = statSync(join(repo, p), { throwIfNoEntry: false });
      return `${p} ${s?.size ?? "-"} ${s?.mtimeMs ?? "-"}`;
    });
  const bun = JSON.parse(readFileSync(join(repo, "node_modules/bun/package.json"), "utf8")).version as string;
  return hash(index, diff, stamps.join("\n"), bun, rigImageRefs.liqo);
}

function liqoRecipe(): Recipe {
  return {
    name: "liqo",
    key: checkoutKey,
    async build({ out, say }) {
      say(`liqo image: scripts/build-image.ts (packages ${dockerfileRuntime().packages.join(" ")})`);
      await buildImage({ out, progress: (m) => say(`liqo image: ${m}`) });
    },
  };
}

/** One builder at a time per cache: two test files starting rigs together must not both debootstrap. */
export async function withLock<T>(cache: string, say: (m: string) => void, body: () => Promise<T>): Promise<T> {
  const lock = join(cache, ".lock");
  const deadline = Date.now() + 45 * 60_000;
  let told = 0;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, "pid"), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let owner = 0;
    let age = 0;
    try {
      age = Date.now() - statSync(lock).mtimeMs;
      owner = Number(readFileSync(join(lock, "pid"), "utf8"));
    } catch {
      /* released meanwhile, or its owner is between mkdir and writing its pid */
    }
    // A lock without a live owner (a killed build) is taken over; a fresh one without a pid yet is not.
    if (owner ? !isAlive(owner) : age > 10_000) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new RigError(
        `the image cache ${cache} stayed locked by pid ${owner}; remove ${lock} if that process is gone`,
      );
    if (Date.now() - told > 30_000) {
      say(`waiting for pid ${owner || "?"} to finish building images in ${cache}`);
      told = Date.now();
    }
    await Bun.sleep(500);
  }
  try {
    return await body();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Keeps the newest few archives of an image, and any built or used in the last 20 minutes: a rig starting in
 * another process (another checkout, or this one before an edit) may not have imported its yet.
 * Older ones go: every edit of the checkout makes a new liqo archive of ~120 MB.
 */
function prune(cache: string, name: string, keep = 3): void {
  const old = readdirSync(cache)
    .filter((f) => f.startsWith(`${name}-`) && f.endsWith(".oci.tar"))
    .map((f) => ({ f, t: statSync(join(cache, f)).mtimeMs }))
    .sort((a, b) => b.t - a.t)
    .slice(keep);
  for (const { f, t } of old) if (Date.now() - t > 20 * 60_000) rmSync(join(cache, f), { force: true });
}

/** Builds the missing archives (a few minutes cold, well under a second warm); returns all four. */
export async function ensureRigImages(progress: (m: string) => void): Promise<{ ref: string; archive: string }[]> {
  return ensureImages(Object.keys(rigImageRefs) as RigImage[], progress);
}

/** ensureRigImages for some of the images. */
export async function ensureImages(
  names: ImageName[],
  progress: (m: string) => void,
): Promise<{ ref: string; archive: string }[]> {
  const cache = imageCacheDir();
  mkdirSync(join(cache, "layers"), { recursive: true });
  const all: Record<ImageName, () => Recipe> = {
    pause: pauseRecipe,
    hello: () => helloRecipe(cache),
    coredns: corednsRecipe,
    liqo: liqoRecipe,
    postgres: () => postgresRecipe(cache),
    prometheus: () => prometheusRecipe(cache),
  };
  const recipes = names.map((n) => all[n]());
  const wanted = await Promise.all(
    recipes.map(async (r) => ({ r, archive: join(cache, `${r.name}-${await r.key()}.oci.tar`) })),
  );
  const missing = wanted.filter((w) => !existsSync(w.archive));
  if (missing.length) {
    await withLock(cache, progress, async () => {
      for (const { r, archive } of missing) {
        if (existsSync(archive)) continue; // built by whoever held the lock before us
        const started = performance.now();
        const work = join(cache, `work-${r.name}-${process.pid}`);
        rmSync(work, { recursive: true, force: true });
        mkdirSync(work, { recursive: true });
        try {
          await r.build({ out: archive, work, say: progress });
        } finally {
          rmSync(work, { recursive: true, force: true });
        }
        prune(cache, r.name);
        const mib = (statSync(archive).size / 1048576).toFixed(1);
        progress(
          `${imageRefs[r.name]}: ${archive} (${mib} MiB) in ${((performance.now() - started) / 1000).toFixed(1)}s`,
        );
      }
    });
  }
  // Marked as used now: prune spares archives used in the last 20 minutes, so another checkout
  // building its own liqo image cannot delete this one between here and its import (a full run
  // lost offloaded-api-access's archive that way while another checkout's tests ran).
  const now = new Date();
  for (const w of wanted) utimesSync(w.archive, now, now);
  return wanted.map((w) => ({ ref: imageRefs[w.r.name], archive: w.archive }));
}

/** The image names the containerd at `socket` lists (CRI's namespace k8s.io). */
export async function listedImages(socket: string): Promise<Set<string>> {
  const out = await run(
    [ctrPath(), "--address", socket, "-n", "k8s.io", "images", "ls", "-q"],
    `listing the images of the containerd at ${socket}`,
  );
  return new Set(out.split("\n"));
}

export function ctrPath(): string {
  const path =
    process.env.LIQO_RIG_CTR ??
    Bun.which("ctr") ??
    Bun.which("ctr", { PATH: "/usr/local/bin:/usr/bin:/usr/sbin:/sbin:/bin" });
  if (!path)
    throw new RigError(
      "ctr (containerd's client) is not installed: apt-get install containerd (scripts/setup.sh installs it)",
    );
  return path;
}

/** The names an archive gives its images: index.json's annotations, else docker's manifest.json tags. */
export async function archiveRefs(archive: string): Promise<string[]> {
  const member = async (name: string) => {
    const p = Bun.spawn(["tar", "-xOf", archive, name], { stdout: "pipe", stderr: "ignore" });
    const text = await new Response(p.stdout).text();
    return (await p.exited) === 0 ? text : undefined;
  };
  const index = await member("index.json");
  const named = index
    ? ((JSON.parse(index).manifests ?? []) as { annotations?: Record<string, string> }[])
        .map((m) => m.annotations?.["io.containerd.image.name"])
        .filter((r): r is string => !!r)
    : [];
  if (named.length) return named;
  const docker = await member("manifest.json");
  return docker
    ? (JSON.parse(docker) as { RepoTags?: string[] }[]).flatMap((m) => m.RepoTags ?? []).map(normalizeRef)
    : [];
}

/** docker's short names as containerd stores them: nginx:1 → docker.io/library/nginx:1. */
export function normalizeRef(ref: string): string {
  const slash = ref.indexOf("/");
  const first = slash < 0 ? "" : ref.slice(0, slash);
  const domained = slash >= 0 && (first.includes(".") || first.includes(":") || first === "localhost");
  const full = domained ? ref : slash < 0 ? `docker.io/library/${ref}` : `docker.io/${ref}`;
  const lastPart = full.slice(full.lastIndexOf("/") + 1);
  return lastPart.includes(":") || lastPart.includes("@") ? full : `${full}:latest`;
}

/**
 * Imports archives into the containerd at `socket` (CRI's namespace k8s.io, unpacked into its
 * snapshotter), then checks that every image the archive names is there.
 */
export async function importImages(socket: string, archives: string[]): Promise<void> {
  const ctr = ctrPath();
  // ctr would retry a missing socket for 10 s before saying so.
  if (!existsSync(socket))
    throw new RigError(
      `cannot import ${archives.join(", ")}: no containerd socket at ${socket} (is the node's containerd running?)`,
    );
  for (const archive of archives) {
    if (!existsSync(archive))
      throw new RigError(`cannot import ${archive} into the containerd at ${socket}: no such file`);
    const refs = await archiveRefs(archive);
    if (!refs.length) {
      throw new RigError(
        `${archive} names no image (no io.containerd.image.name annotation in index.json, no RepoTags in manifest.json); a pod could not refer to it`,
      );
    }
    const p = Bun.spawn([ctr, "--address", socket, "-n", "k8s.io", "images", "import", archive], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
    if ((await p.exited) !== 0) {
      throw new RigError(
        `importing ${archive} into the containerd at ${socket} failed (ctr exit ${p.exitCode}): ${(err || out).trim().slice(-1500)}`,
      );
    }
    const listed = await listedImages(socket);
    const absent = refs.filter((r) => !listed.has(r));
    if (absent.length)
      throw new RigError(
        `imported ${archive} into the containerd at ${socket}, but it lists no ${absent.join(", ")}: ${out.trim().slice(-500)}`,
      );
  }
}
