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
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { DEBIAN_SUITE, debianRootfs, RUNTIME_PATHS } from "./debian-rootfs.ts";
import { makeLayer, ociArch, writeOciArchive, type Layer } from "./oci-archive.ts";

const root = resolve(import.meta.dir, "..");

export interface BuildOptions {
  out?: string;
  cache?: string;
  progress?: (m: string) => void;
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

/** wireguard-go built from its module (static, stripped), once per version. */
export async function wireguardGoBinary(cache: string, module: string, say: (m: string) => void): Promise<string> {
  const dir = join(cache, `wireguard-go-${module.split("@")[1]}`);
  const bin = join(dir, "wireguard");
  if (existsSync(bin)) return bin;
  say(`building ${module} (go install)`);
  mkdirSync(dir, { recursive: true });
  const p = Bun.spawn(["go", "install", "-trimpath", "-ldflags", "-s -w", module], {
    cwd: dir,
    env: { ...process.env, GOBIN: dir, CGO_ENABLED: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const err = await new Response(p.stderr).text();
  if ((await p.exited) !== 0)
    throw new Error(`go install ${module} failed (Go >= 1.24 is needed, as for the rig):\n${err.trim().slice(-2000)}`);
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
async function stageApp(stage: string, say: (m: string) => void): Promise<void> {
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
}

export async function buildImage(o: BuildOptions = {}): Promise<BuiltImage> {
  const say = o.progress ?? ((m: string) => process.stderr.write(`[build-image] ${m}\n`));
  const cache = o.cache ?? process.env.LIQO_IMAGE_CACHE ?? join(homedir(), ".cache/liqo-bun/image");
  const out = resolve(o.out ?? join(root, "dist/liqo-image.oci.tar"));
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
  // oven/bun's images run as user bun, uid 1000; the Dockerfile's USER 1000 is that user.
  const base = await debianRootfs({ cache, packages: docker.packages, users: [{ name: "bun", uid: 1000 }], say });
  say("layer 1/4: the Debian root file system");
  const layers: Layer[] = [
    await makeLayer(base.dir, join(cache, "layers", `rootfs-${base.key}.tar.gz`), {
      comment: `debootstrap --variant=minbase ${DEBIAN_SUITE} + apt-get install ${docker.packages.join(" ")}`,
      // Device nodes, /proc and /sys are the runtime's to provide, as in any image.
      exclude: RUNTIME_PATHS,
    }),
  ];

  const work = join(cache, `work-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  try {
    say(`layer 2/4: Bun ${bunVersion}`);
    const bunStage = join(work, "bun");
    mkdirSync(join(bunStage, "usr/local/bin"), { recursive: true });
    cpSync(join(root, "node_modules/bun/bin/bun.exe"), join(bunStage, "usr/local/bin/bun"));
    chmodSync(join(bunStage, "usr/local/bin/bun"), 0o755);
    symlinkSync("bun", join(bunStage, "usr/local/bin/bunx"));
    layers.push(
      await makeLayer(bunStage, join(cache, "layers", `bun-${bunVersion}-${ociArch()}.tar.gz`), {
        comment: `Bun ${bunVersion} at /usr/local/bin/bun`,
      }),
    );

    say(`layer 3/4: the app at ${docker.workingDir}`);
    const appStage = join(work, "app");
    await stageApp(appStage, say);
    layers.push(await makeLayer(appStage, join(work, "app.tar.gz"), { comment: "COPY --from=build /liqo /liqo" }));

    say(`layer 4/4: ${docker.wireguardGo} at /usr/local/bin/wireguard-go`);
    const wgStage = join(work, "wireguard-go");
    mkdirSync(join(wgStage, "usr/local/bin"), { recursive: true });
    cpSync(await wireguardGoBinary(cache, docker.wireguardGo, say), join(wgStage, "usr/local/bin/wireguard-go"));
    chmodSync(join(wgStage, "usr/local/bin/wireguard-go"), 0o755);
    layers.push(
      await makeLayer(
        wgStage,
        join(cache, "layers", `wireguard-go-${docker.wireguardGo.split("@")[1]}-${ociArch()}.tar.gz`),
        { comment: `go install ${docker.wireguardGo}` },
      ),
    );

    const ref = `ghcr.io/liqo-bun/liqo:${pkg.version}`;
    say(`writing ${out}`);
    const written = await writeOciArchive({
      out,
      layers,
      ref,
      work,
      config: {
        user: docker.user,
        workingDir: docker.workingDir,
        entrypoint: docker.entrypoint,
        env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        labels: {
          "org.opencontainers.image.title": "liqo",
          "org.opencontainers.image.version": pkg.version,
          "org.opencontainers.image.source": "https://github.com/liqo-bun/liqo",
        },
      },
    });
    return {
      path: out,
      ref,
      layers: layers.map((l) => ({ ...l, path: l.path.startsWith(work) ? "" : l.path })),
      ...written,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
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
