// `bash scripts/release.sh VERSION` (or `bun run release VERSION`): every artifact of a release,
// built into dist/release-VERSION/ (emptied first):
//   liqoctl-VERSION-{linux,darwin}-{amd64,arm64}.tar.gz   liqoctl (scripts/build-liqoctl.ts) in a tarball
//   liqo-image-VERSION.oci.tar   the image, one OCI image index of a linux/amd64 and a linux/arm64
//                                image (scripts/build-image.ts), tagged ghcr.io/liqo-bun/liqo:VERSION
//   liqo-VERSION.tgz             the Helm chart (helm package), version and appVersion VERSION
//   SHA256SUMS                   sha256sum's format, over all of the above
// Everything reports VERSION and the commit it was built from (liqoctl version, /liqo/build-info.json).
// docs/release.md says how to cut a release, verify it and load the image.
//
// VERSION is semver without the tag's "v" (0.1.0, 0.2.0-rc.1): package.json's version or a
// pre-release of it. A checkout with uncommitted changes to tracked files is refused (the
// artifacts would not be what the commit says) unless --allow-dirty, which marks the commit "-dirty".
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createReadStream } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { findHelm } from "../cli/install/helm.ts";
import type { BuildInfo } from "../cli/version.ts";
import { builtinNames, ensureBuilt } from "../reflectors/build.ts";
import { buildMultiArchImage } from "./build-image.ts";
import { allTargets, buildLiqoctl, sourceCommit, type Target } from "./build-liqoctl.ts";
import { epoch } from "./oci-archive.ts";

const root = resolve(import.meta.dir, "..");

/** Semantic Versioning 2.0.0 without build metadata ("+..." is not allowed in an image tag). */
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?$/;

export class ReleaseError extends Error {}

/** Why VERSION cannot be released from a checkout whose package.json says `pkgVersion`, or undefined. */
export function versionProblem(version: string, pkgVersion: string): string | undefined {
  if (!version) return "give the version to release: bash scripts/release.sh 0.1.0";
  if (/^v\d/.test(version))
    return `${version}: give the version without the tag's "v": bash scripts/release.sh ${version.slice(1)}`;
  if (version.includes("+"))
    return `${version}: semver build metadata ("+...") cannot be part of an image tag; use a pre-release instead (${version.split("+")[0]}-rc.1)`;
  if (!SEMVER.test(version))
    return `${version} is not a semantic version (MAJOR.MINOR.PATCH, optionally -PRERELEASE, e.g. 0.1.0 or 0.2.0-rc.1)`;
  if (version !== pkgVersion && !version.startsWith(`${pkgVersion}-`))
    return `${version}: package.json's version is ${pkgVersion}; release ${pkgVersion} (or a pre-release of it, ${pkgVersion}-rc.1), or set package.json's version to ${version.split("-")[0]} and commit it first`;
  return undefined;
}

/** The name users expect: Go's GOOS-GOARCH, not Bun's linux-x64. */
export const liqoctlArtifact = (version: string, t: Target) => `liqoctl-${version}-${t.replace("x64", "amd64")}.tar.gz`;

async function run(cmd: string[], what: string, cwd = root): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0)
    throw new ReleaseError(`${what} failed (exit ${p.exitCode}):\n${(err || out).trim().slice(-3000)}`);
  return out;
}

async function sha256(path: string): Promise<string> {
  const h = new Bun.CryptoHasher("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return h.digest("hex");
}

/** A reproducible tar.gz of one file, stored under `name`. */
async function tarGz(file: string, name: string, out: string): Promise<void> {
  const stage = `${out}.d`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage);
  await run(["cp", file, join(stage, name)], `copy ${file}`);
  await run(
    [
      "sh",
      "-c",
      `tar -C '${stage}' --sort=name --mtime=@${epoch()} --owner=0 --group=0 --numeric-owner -cf - '${name}' | gzip -n -6 > '${out}'`,
    ],
    `tar ${out}`,
  );
  rmSync(stage, { recursive: true, force: true });
}

export interface ReleaseOptions {
  version: string;
  /** Default dist/release-VERSION. */
  out?: string;
  allowDirty?: boolean;
  say?: (m: string) => void;
}
export interface Release {
  dir: string;
  info: BuildInfo;
  artifacts: { name: string; size: number }[];
  seconds: number;
}

export async function release(o: ReleaseOptions): Promise<Release> {
  const started = performance.now();
  const t0 = () => `${((performance.now() - started) / 1000).toFixed(0)}s`;
  const say = (m: string) => (o.say ?? ((l: string) => console.error(l)))(`[release ${t0()}] ${m}`);
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  const problem = versionProblem(o.version, pkg.version);
  if (problem) throw new ReleaseError(problem);
  const commit = await sourceCommit();
  if (commit === "unknown")
    throw new ReleaseError(
      "not a git checkout (git rev-parse HEAD failed): a release records the commit it is built from",
    );
  if (commit.endsWith("-dirty")) {
    const changed = (await run(["git", "status", "--porcelain", "--untracked-files=no"], "git status")).trimEnd();
    if (!o.allowDirty)
      throw new ReleaseError(
        `tracked files differ from commit ${commit.slice(0, 40)}: commit them first, or pass --allow-dirty (the artifacts then say ${commit.slice(0, 12)}...-dirty):\n${changed}`,
      );
    say(`WARNING: uncommitted changes are built in; the artifacts say commit ${commit}`);
  }
  const helm = (() => {
    try {
      return findHelm();
    } catch (err) {
      throw new ReleaseError(`${(err as Error).message} (bash tests/rig/build.sh builds the pinned one)`);
    }
  })();
  const info: BuildInfo = { version: o.version, commit };
  const dir = resolve(o.out ?? join(root, "dist", `release-${o.version}`));
  say(`liqo ${info.version} from commit ${info.commit} into ${relative(root, dir) || dir}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const work = join(dir, ".work");
  mkdirSync(work);

  say("building the WASM reflectors liqoctl embeds");
  await ensureBuilt([...builtinNames]);
  for (const t of allTargets) {
    const name = liqoctlArtifact(info.version, t);
    say(`liqoctl for ${t}: ${name}`);
    // Cross targets: bun build fetches that platform's runtime once (network needed the first time).
    const bin = await buildLiqoctl(t, work, { info, name: `liqoctl-${t}` }).catch((err: AggregateError) => {
      const detail = err.errors?.map(String).join("\n") ?? "";
      throw new ReleaseError(`building liqoctl for ${t} failed: ${err.message}${detail ? `\n${detail}` : ""}`);
    });
    await tarGz(bin, "liqoctl", join(dir, name));
    rmSync(bin);
  }

  const imageName = `liqo-image-${info.version}.oci.tar`;
  say(`the image for linux/amd64 and linux/arm64: ${imageName}`);
  const image = await buildMultiArchImage({
    archs: ["amd64", "arm64"],
    info,
    out: join(dir, imageName),
    progress: (m) => say(`  image: ${m}`),
  });
  say(`  ${image.ref}, index ${image.index}`);

  say(`the Helm chart (${helm} package)`);
  await run(
    [helm, "package", join(root, "chart"), "--version", info.version, "--app-version", info.version, "-d", dir],
    "helm package chart",
  );
  const chart = join(dir, `liqo-${info.version}.tgz`);
  if (!existsSync(chart)) throw new ReleaseError(`helm package wrote no ${basename(chart)} in ${dir}`);

  rmSync(work, { recursive: true, force: true });
  const names = [...new Bun.Glob("*").scanSync({ cwd: dir })].filter((n) => n !== "SHA256SUMS").sort();
  say(`SHA256SUMS over ${names.length} artifacts`);
  const sums: string[] = [];
  for (const n of names) sums.push(`${await sha256(join(dir, n))}  ${n}`);
  writeFileSync(join(dir, "SHA256SUMS"), `${sums.join("\n")}\n`);
  const artifacts = [...names, "SHA256SUMS"].map((name) => ({ name, size: statSync(join(dir, name)).size }));
  return { dir, info, artifacts, seconds: (performance.now() - started) / 1000 };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const allowDirty = args.includes("--allow-dirty");
  const outAt = args.indexOf("--out");
  const out = outAt >= 0 ? args[outAt + 1] : undefined;
  const positional = args.filter((a, i) => !a.startsWith("--") && (outAt < 0 || i !== outAt + 1));
  const unknown = args.filter((a) => a.startsWith("--") && a !== "--allow-dirty" && a !== "--out");
  if (unknown.length || positional.length > 1 || (outAt >= 0 && !out)) {
    console.error("usage: bash scripts/release.sh VERSION [--out DIR] [--allow-dirty]");
    process.exit(2);
  }
  try {
    const r = await release({ version: positional[0] ?? "", out, allowDirty });
    const mb = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
    console.log(`liqo ${r.info.version} (commit ${r.info.commit}) in ${r.dir}, built in ${r.seconds.toFixed(0)} s:`);
    for (const a of r.artifacts) console.log(`  ${mb(a.size).padStart(10)}  ${a.name}`);
    console.log(`verify: (cd ${relative(process.cwd(), r.dir) || "."} && sha256sum -c SHA256SUMS)`);
  } catch (err) {
    console.error(`release: ${err instanceof ReleaseError ? err.message : (err as Error).stack}`);
    process.exit(1);
  }
}
