// The previous release, built here from its commit, for the upgrade test: CHANGELOG.md's newest
// section whose version is not package.json's names the version and the commit. Its sources are
// exported with `git archive` (no worktree registered in this checkout), given node_modules, and its
// own scripts/build-image.ts builds its image with its own Dockerfile's packages. Everything is
// cached under ~/.cache/liqo-bun/releases/<version>-<commit>/ (src/, liqo.oci.tar): the first build
// takes a few minutes (a Debian layer of that release's package set), the next ones nothing.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RigError } from "./errors.ts";
import { checkoutVersion, imageCacheDir, withLock } from "./images.ts";

const repo = resolve(import.meta.dir, "../..");

export interface ReleaseEntry {
  version: string;
  commit: string;
}

/** The `## VERSION — DATE` sections of a changelog, newest first, with the commit each names. */
export function changelogReleases(text: string): ReleaseEntry[] {
  const out: ReleaseEntry[] = [];
  const sections = text.split(/^## /m).slice(1);
  for (const s of sections) {
    const version = /^(\S+)\s+—/.exec(s)?.[1];
    const commit = /Commit `([0-9a-f]{7,40})`/.exec(s)?.[1];
    if (version && commit) out.push({ version, commit });
  }
  return out;
}

/** The release an upgrade starts from: the newest changelog entry older than `current`. */
export function previousReleaseOf(entries: ReleaseEntry[], current: string): ReleaseEntry | undefined {
  return entries
    .filter((e) => Bun.semver.order(e.version, current) < 0)
    .sort((a, b) => Bun.semver.order(b.version, a.version))[0];
}

export interface PreviousRelease extends ReleaseEntry {
  /** Its sources, with node_modules: run its liqoctl as `bun <src>/cli/main.ts`. */
  src: string;
  liqoctl: string[];
  /** Its chart's image, as the rig imports it into the nodes. */
  image: { ref: string; archive: string };
}

async function sh(cmd: string[], what: string, cwd = repo): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0) throw new RigError(`${what} failed (exit ${p.exitCode}):\n${(err || out).slice(-3000)}`);
  return out;
}

/** package-lock.json's packages but the project itself (whose version differs between releases). */
function lockedPackages(dir: string): string {
  const lock = JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  const { "": _self, ...rest } = lock.packages;
  return JSON.stringify(rest);
}

/** Finds (or builds, once) the previous release's sources and image. */
export async function ensurePreviousRelease(say: (m: string) => void): Promise<PreviousRelease> {
  const current = checkoutVersion();
  const entry = previousReleaseOf(changelogReleases(readFileSync(join(repo, "CHANGELOG.md"), "utf8")), current);
  if (!entry)
    throw new RigError(`CHANGELOG.md names no release older than package.json's ${current}: nothing to upgrade from`);
  const commit = (
    await sh(["git", "rev-parse", "--verify", `${entry.commit}^{commit}`], `git rev-parse ${entry.commit}`).catch(
      (err) => {
        throw new RigError(
          `release ${entry.version}'s commit ${entry.commit} is not in this clone (${(err as Error).message.trim()}): ` +
            "clone with history (not --depth), or git fetch origin",
        );
      },
    )
  ).trim();
  const home = join(imageCacheDir(), "..", "releases", `${entry.version}-${commit.slice(0, 12)}`);
  const src = join(home, "src");
  const archive = join(home, "liqo.oci.tar");
  const ref = `ghcr.io/liqo-bun/liqo:${entry.version}`;
  const done = () => ({
    ...entry,
    commit,
    src,
    liqoctl: [process.execPath, join(src, "cli/main.ts")],
    image: { ref, archive },
  });
  if (existsSync(archive) && existsSync(join(src, ".ready"))) return done();
  mkdirSync(home, { recursive: true });
  await withLock(home, say, async () => {
    if (existsSync(archive) && existsSync(join(src, ".ready"))) return;
    const started = performance.now();
    rmSync(src, { recursive: true, force: true });
    mkdirSync(src, { recursive: true });
    say(`previous release ${entry.version}: exporting commit ${commit.slice(0, 12)} (git archive)`);
    await sh(["sh", "-c", `git archive --format=tar ${commit} | tar -C '${src}' -xf -`], "git archive");
    // Its scripts list the build context with `git ls-files --others`: an empty repository is enough.
    await sh(["git", "init", "-q"], "git init", src);
    if (lockedPackages(src) === lockedPackages(repo)) {
      say(`previous release ${entry.version}: the same locked packages: node_modules hard-linked from this checkout`);
      await sh(["cp", "-al", join(repo, "node_modules"), join(src, "node_modules")], "cp -al node_modules").catch(() =>
        sh(["cp", "-a", join(repo, "node_modules"), join(src, "node_modules")], "cp -a node_modules"),
      );
    } else {
      say(`previous release ${entry.version}: bun install --frozen-lockfile`);
      await sh([process.execPath, "install", "--frozen-lockfile"], "bun install (previous release)", src);
    }
    say(`previous release ${entry.version}: building its image with its own scripts/build-image.ts`);
    const partial = `${archive}.partial`;
    const script = [
      `const { buildImage } = await import(${JSON.stringify(join(src, "scripts/build-image.ts"))});`,
      `await buildImage({ out: ${JSON.stringify(partial)}, info: { version: ${JSON.stringify(entry.version)}, commit: ${JSON.stringify(commit)} }, progress: (m) => console.error(m) });`,
    ].join("\n");
    await sh([process.execPath, "-e", script], `building liqo ${entry.version}'s image`, src);
    renameSync(partial, archive);
    writeFileSync(join(src, ".ready"), `${new Date().toISOString()}\n`);
    say(`previous release ${entry.version}: ready in ${((performance.now() - started) / 1000).toFixed(0)}s (${home})`);
  });
  return done();
}
