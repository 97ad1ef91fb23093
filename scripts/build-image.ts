// `bun run build:image`: the liqo image as an OCI archive (dist/liqo-image.oci.tar), without a
// container engine. It builds what the Dockerfile describes, from the same sources:
//   layer 1  Debian bookworm (debootstrap --variant=minbase) + the packages the Dockerfile's
//            runtime stage apt-get installs; cached under ~/.cache/liqo-bun/image/
//   layer 2  Bun at /usr/local/bin/bun, the binary npm installed (package.json devDependencies.bun)
//   layer 3  /liqo: the checkout minus .dockerignore, the built .wasm reflectors, and the
//            production dependencies (package-lock.json entries not marked dev, as `npm prune --omit=dev`)
//   layer 4  wireguard-go at /usr/local/bin, built with `go install` from the module version the
//            Dockerfile's wireguard-go stage pins; cached under ~/.cache/liqo-bun/image/
// and the Dockerfile's ENTRYPOINT, USER and WORKDIR, read from the Dockerfile itself so the two
// cannot drift. Load it with `docker load -i`, copy it with `skopeo copy oci-archive:...` (docs/install.md).
// /liqo/build-info.json carries the version and source commit the roles report (cli/version.ts).
// For another CPU (arm64 on amd64; buildMultiArchImage, used by the release) every layer but the
// app's is that CPU's: a Debian root file system of that architecture (scripts/debian-rootfs.ts,
// debootstrap's second stage under qemu), Bun from npm's @oven/bun-linux-<cpu> at the same version
// (its tarball checked against package-lock.json's integrity), wireguard-go with GOARCH. The app's
// layer is shared: the production dependencies are JavaScript and WebAssembly only.
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { BuildInfo } from "../cli/version.ts";
import { defaultBuildInfo } from "./build-liqoctl.ts";
import { DEBIAN_SUITE, type DebianArch, debianRootfs, hostDebianArch, RUNTIME_PATHS } from "./debian-rootfs.ts";
import {
  type ImageConfig,
  type Layer,
  makeLayer,
  type PlatformImage,
  writeMultiArchOciArchive,
  writeOciArchive,
} from "./oci-archive.ts";

const root = resolve(import.meta.dir, "..");

export interface BuildOptions {
  out?: string;
  cache?: string;
  progress?: (m: string) => void;
  /** The CPU (default: this machine's). */
  arch?: DebianArch;
  /** The version (image tag) and commit the image reports (default: package.json's, the checkout's). */
  info?: BuildInfo;
}
export interface BuiltImage {
  path: string;
  ref: string;
  manifest: string;
  config: string;
  size: number;
  layers: Layer[];
}

/** What the image must match in the Dockerfile: runtime packages, entrypoint, user, working dir. */
export function dockerfileRuntime(text = readFileSync(join(root, "Dockerfile"), "utf8")) {
  const joined = text.replace(/\\\n/g, " ");
  const stages = joined.split(/^FROM\s/m);
  const runtime = stages[stages.length - 1]!;
  const lines = runtime
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const last = (op: string) =>
    lines
      .filter((l) => l.startsWith(`${op} `))
      .map((l) => l.slice(op.length + 1).trim())
      .pop();
  const install = runtime.match(/apt-get install -y --no-install-recommends ([^&]+)/);
  if (!install)
    throw new Error(
      "Dockerfile: the runtime stage has no `apt-get install -y --no-install-recommends <packages>` step to take the package list from",
    );
  const entrypoint = JSON.parse(last("ENTRYPOINT") ?? "null") as string[] | null;
  const user = last("USER");
  const workingDir = last("WORKDIR");
  const bun = runtime.match(/^\s*oven\/bun:(\d+\.\d+\.\d+)/)?.[1];
  if (!entrypoint || !user || !workingDir || !bun)
    throw new Error("Dockerfile: the runtime stage (oven/bun:<version>) needs ENTRYPOINT [...], USER and WORKDIR");
  const wireguardGo = joined.match(/go install [^\n]*?(golang\.zx2c4\.com\/wireguard@\S+)/)?.[1];
  if (!wireguardGo)
    throw new Error(
      "Dockerfile: no `go install ... golang.zx2c4.com/wireguard@<version>` step to take wireguard-go's version from",
    );
  return {
    packages: install[1]!.trim().split(/\s+/).sort(),
    entrypoint,
    user,
    workingDir,
    bunVersion: bun,
    wireguardGo,
  };
}

/** wireguard-go built from its module (static, stripped), once per version and CPU. */
export async function wireguardGoBinary(
  cache: string,
  module: string,
  say: (m: string) => void,
  arch: DebianArch = hostDebianArch(),
): Promise<string> {
  const foreign = arch !== hostDebianArch();
  // The host's build keeps the folder name it had before other CPUs were built.
  const dir = join(cache, `wireguard-go-${module.split("@")[1]}${foreign ? `-${arch}` : ""}`);
  const bin = join(dir, "wireguard");
  if (existsSync(bin)) return bin;
  say(`building ${module} for ${arch} (go install)`);
  mkdirSync(dir, { recursive: true });
  // go install refuses GOBIN for another GOOS/GOARCH: build into a temporary GOPATH's bin/linux_<arch>.
  const gopath = join(dir, "gopath");
  const p = Bun.spawn(["go", "install", "-trimpath", "-ldflags", "-s -w", module], {
    cwd: dir,
    env: {
      ...process.env,
      CGO_ENABLED: "0",
      GOOS: "linux",
      GOARCH: arch,
      ...(foreign ? { GOPATH: gopath, GOBIN: "", GOMODCACHE: goEnv("GOMODCACHE") } : { GOBIN: dir }),
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const err = await new Response(p.stderr).text();
  if ((await p.exited) !== 0)
    throw new Error(`go install ${module} failed (Go >= 1.24 is needed, as for the rig):\n${err.trim().slice(-2000)}`);
  if (foreign) {
    const built = join(gopath, "bin", `linux_${arch}`, "wireguard");
    if (!existsSync(built)) throw new Error(`go install ${module} for ${arch} left no ${built}`);
    cpSync(built, bin);
    rmSync(gopath, { recursive: true, force: true });
  }
  return bin;
}

const goEnv = (name: string) => Bun.spawnSync(["go", "env", name]).stdout.toString().trim();

const NPM_BUN_PACKAGE: Record<DebianArch, string> = { amd64: "@oven/bun-linux-x64", arm64: "@oven/bun-linux-aarch64" };

/**
 * Bun's Linux binary for `arch`: this machine's from node_modules/bun, another CPU's from its npm
 * package at the same version (npm pack), checked against the integrity package-lock.json records.
 */
export async function bunBinary(
  cache: string,
  version: string,
  arch: DebianArch,
  say: (m: string) => void,
): Promise<string> {
  if (arch === hostDebianArch()) return join(root, "node_modules/bun/bin/bun.exe");
  const name = NPM_BUN_PACKAGE[arch];
  const dir = join(cache, `bun-${version}-${arch}`);
  const bin = join(dir, "bun");
  if (existsSync(bin)) return bin;
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string; integrity?: string }>;
  };
  const locked = lock.packages[`node_modules/${name}`];
  if (locked?.version !== version || !locked.integrity)
    throw new Error(
      `package-lock.json has no ${name}@${version} with an integrity to check its download against (it has ${locked?.version ?? "none"}): npm install bun@${version} records it`,
    );
  say(`fetching ${name}@${version} (npm pack)`);
  const partial = `${dir}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const out = await sh(
    ["npm", "pack", "--silent", "--pack-destination", partial, `${name}@${version}`],
    `npm pack ${name}@${version}`,
    { cwd: partial },
  );
  const tgz = join(partial, out.trim().split("\n").pop()!);
  const [algo, want] = locked.integrity.split("-", 2) as [string, string];
  const got = new Bun.CryptoHasher(algo as "sha512").update(readFileSync(tgz)).digest("base64");
  if (got !== want)
    throw new Error(
      `${name}@${version}: the tarball's ${algo} is ${got}, package-lock.json says ${want}: not using it`,
    );
  await sh(["tar", "-xzf", tgz, "-C", partial, "package/bin/bun"], `unpack ${tgz}`);
  cpSync(join(partial, "package/bin/bun"), join(partial, "bun"));
  rmSync(join(partial, "package"), { recursive: true, force: true });
  rmSync(tgz);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return bin;
}

async function sh(cmd: string[], what: string, o: { cwd?: string; quiet?: boolean } = {}): Promise<string> {
  const p = Bun.spawn(cmd, { cwd: o.cwd ?? root, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0)
    throw new Error(`${what} failed (exit ${p.exitCode}):\n${(err || out).trim().slice(-3000)}`);
  return out;
}

/** Files the Dockerfile's `COPY . .` takes: tracked and untracked files, minus .dockerignore. */
async function contextFiles(): Promise<string[]> {
  const patterns = readFileSync(join(root, ".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const ignored = (p: string) => patterns.some((g) => new Bun.Glob(g).match(p) || p.startsWith(`${g}/`));
  const listed = (await sh(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], "git ls-files"))
    .split("\0")
    .filter(Boolean);
  return listed.filter((p) => !ignored(p) && existsSync(join(root, p)));
}

/** Stages /liqo as the Dockerfile's build stage leaves it. */
async function stageApp(stage: string, info: BuildInfo, say: (m: string) => void): Promise<void> {
  const app = join(stage, "liqo");
  mkdirSync(app, { recursive: true });
  say("building the WASM reflectors (bun reflectors/build.ts)");
  await sh([process.execPath, "reflectors/build.ts"], "bun reflectors/build.ts");
  const wasm = [...new Bun.Glob("**/*.wasm").scanSync({ cwd: root, dot: false })].filter(
    (p) => !/^(node_modules|dist|\.rig|\.tmp-exp|tests\/artifacts)\//.test(p),
  );
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean }>;
  };
  // Top-level production packages; nested node_modules come along inside their parents.
  const deps = Object.entries(lock.packages)
    .filter(
      ([k, v]) =>
        k.startsWith("node_modules/") && !k.slice(13).includes("node_modules/") && !v.dev && existsSync(join(root, k)),
    )
    .map(([k]) => k);
  const files = [...(await contextFiles()), ...wasm, ...deps];
  say(`staging /liqo: ${files.length - deps.length} files, ${wasm.length} .wasm, ${deps.length} production packages`);
  const list = join(stage, "files.txt");
  writeFileSync(list, files.join("\0"));
  await sh(
    ["sh", "-c", `tar -C '${root}' --null -T '${list}' -cf - | tar -C '${app}' -xf -`],
    "copy the app into the stage",
  );
  rmSync(list);
  writeFileSync(join(app, "build-info.json"), `${JSON.stringify(info)}\n`);
}

interface Prepared {
  say: (m: string) => void;
  cache: string;
  docker: ReturnType<typeof dockerfileRuntime>;
  bunVersion: string;
  info: BuildInfo;
  ref: string;
  config: ImageConfig;
}

async function prepare(o: BuildOptions): Promise<Prepared> {
  const say = o.progress ?? ((m: string) => process.stderr.write(`[build-image] ${m}\n`));
  const cache = o.cache ?? process.env.LIQO_IMAGE_CACHE ?? join(homedir(), ".cache/liqo-bun/image");
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const docker = dockerfileRuntime();
  const bunVersion = pkg.devDependencies.bun as string;
  const installedBun = JSON.parse(readFileSync(join(root, "node_modules/bun/package.json"), "utf8")).version as string;
  if (installedBun !== bunVersion || docker.bunVersion !== bunVersion) {
    throw new Error(
      `Bun versions disagree: package.json ${bunVersion}, node_modules/bun ${installedBun} (run npm ci), Dockerfile oven/bun:${docker.bunVersion}`,
    );
  }
  mkdirSync(join(cache, "layers"), { recursive: true });
  const info = o.info ?? (await defaultBuildInfo());
  return {
    say,
    cache,
    docker,
    bunVersion,
    info,
    ref: `ghcr.io/liqo-bun/liqo:${info.version}`,
    config: {
      user: docker.user,
      workingDir: docker.workingDir,
      entrypoint: docker.entrypoint,
      env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      labels: {
        "org.opencontainers.image.title": "liqo",
        "org.opencontainers.image.version": info.version,
        "org.opencontainers.image.revision": info.commit,
        "org.opencontainers.image.source": "https://github.com/liqo-bun/liqo",
      },
    },
  };
}

/** The app's layer (/liqo): the same for every CPU. */
async function appLayer(p: Prepared, work: string): Promise<Layer> {
  p.say(`the app at ${p.docker.workingDir} (version ${p.info.version}, commit ${p.info.commit})`);
  const appStage = join(work, "app");
  await stageApp(appStage, p.info, p.say);
  return makeLayer(appStage, join(work, "app.tar.gz"), { comment: "COPY --from=build /liqo /liqo" });
}

/** One CPU's layers: the Debian root file system, Bun, the app, wireguard-go. */
async function platformLayers(p: Prepared, arch: DebianArch, work: string, app: Layer): Promise<Layer[]> {
  const { say, cache, docker, bunVersion } = p;
  // oven/bun's images run as user bun, uid 1000; the Dockerfile's USER 1000 is that user.
  const base = await debianRootfs({
    cache,
    packages: docker.packages,
    users: [{ name: "bun", uid: 1000 }],
    arch,
    say,
  });
  say(`${arch} layer 1/4: the Debian root file system`);
  const layers: Layer[] = [
    await makeLayer(base.dir, join(cache, "layers", `rootfs-${base.key}.tar.gz`), {
      comment: `debootstrap --variant=minbase ${DEBIAN_SUITE} + apt-get install ${docker.packages.join(" ")}`,
      // Device nodes, /proc and /sys are the runtime's to provide, as in any image.
      exclude: RUNTIME_PATHS,
    }),
  ];

  say(`${arch} layer 2/4: Bun ${bunVersion}`);
  const bunStage = join(work, `bun-${arch}`);
  mkdirSync(join(bunStage, "usr/local/bin"), { recursive: true });
  cpSync(await bunBinary(cache, bunVersion, arch, say), join(bunStage, "usr/local/bin/bun"));
  chmodSync(join(bunStage, "usr/local/bin/bun"), 0o755);
  symlinkSync("bun", join(bunStage, "usr/local/bin/bunx"));
  layers.push(
    await makeLayer(bunStage, join(cache, "layers", `bun-${bunVersion}-${arch}.tar.gz`), {
      comment: `Bun ${bunVersion} at /usr/local/bin/bun`,
    }),
  );

  say(`${arch} layer 3/4: the app at ${docker.workingDir}`);
  layers.push(app);

  say(`${arch} layer 4/4: ${docker.wireguardGo} at /usr/local/bin/wireguard-go`);
  const wgStage = join(work, `wireguard-go-${arch}`);
  mkdirSync(join(wgStage, "usr/local/bin"), { recursive: true });
  cpSync(await wireguardGoBinary(cache, docker.wireguardGo, say, arch), join(wgStage, "usr/local/bin/wireguard-go"));
  chmodSync(join(wgStage, "usr/local/bin/wireguard-go"), 0o755);
  layers.push(
    await makeLayer(wgStage, join(cache, "layers", `wireguard-go-${docker.wireguardGo.split("@")[1]}-${arch}.tar.gz`), {
      comment: `go install ${docker.wireguardGo}`,
    }),
  );
  return layers;
}

const withWork = async <T>(cache: string, f: (work: string) => Promise<T>): Promise<T> => {
  const work = join(cache, `work-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  try {
    return await f(work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
};

/** The image for one CPU (default: this machine's), as an OCI archive. */
export async function buildImage(o: BuildOptions = {}): Promise<BuiltImage> {
  const p = await prepare(o);
  const out = resolve(o.out ?? join(root, "dist/liqo-image.oci.tar"));
  const arch = o.arch ?? hostDebianArch();
  return withWork(p.cache, async (work) => {
    const layers = await platformLayers(p, arch, work, await appLayer(p, work));
    p.say(`writing ${out}`);
    const written = await writeOciArchive({ out, layers, ref: p.ref, work, config: p.config, arch });
    return {
      path: out,
      ref: p.ref,
      layers: layers.map((l) => ({ ...l, path: l.path.startsWith(work) ? "" : l.path })),
      ...written,
    };
  });
}

export interface BuiltMultiArchImage {
  path: string;
  ref: string;
  index: string;
  size: number;
  manifests: { arch: string; manifest: string; config: string; layers: Layer[] }[];
}

/** One OCI archive holding an image index of one image per CPU in `archs` (the release's). */
export async function buildMultiArchImage(
  o: Omit<BuildOptions, "arch"> & { archs: DebianArch[] },
): Promise<BuiltMultiArchImage> {
  const p = await prepare(o);
  const out = resolve(o.out ?? join(root, "dist/liqo-image.oci.tar"));
  return withWork(p.cache, async (work) => {
    const app = await appLayer(p, work);
    const images: PlatformImage[] = [];
    for (const arch of o.archs)
      images.push({ arch, layers: await platformLayers(p, arch, work, app), config: p.config });
    p.say(`writing ${out} (${o.archs.join(" + ")})`);
    const written = await writeMultiArchOciArchive({ out, images, ref: p.ref, work });
    return {
      path: out,
      ref: p.ref,
      index: written.index,
      size: written.size,
      manifests: written.manifests.map((m, i) => ({
        ...m,
        layers: images[i]!.layers.map((l) => ({ ...l, path: l.path.startsWith(work) ? "" : l.path })),
      })),
    };
  });
}

if (import.meta.main) {
  const started = performance.now();
  try {
    const img = await buildImage();
    const mb = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
    console.log(`${img.path} (${mb(img.size)}) in ${((performance.now() - started) / 1000).toFixed(1)}s`);
    console.log(`  image ${img.ref}, manifest ${img.manifest}`);
    for (const l of img.layers)
      console.log(`  layer ${l.digest.slice(0, 19)} ${mb(l.size).padStart(10)}  ${l.comment}`);
    console.log(
      `load it: docker load -i ${img.path}    push it: skopeo copy oci-archive:${img.path} docker://<registry>/liqo:<tag>`,
    );
  } catch (err) {
    console.error(`ERROR ${(err as Error).message}`);
    process.exit(1);
  }
}
