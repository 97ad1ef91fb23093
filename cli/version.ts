// The version and source commit liqoctl and every `liqo` role report. Where they come from, first found:
//   1. a compiled liqoctl: the build's --define of LIQO_BUILD_VERSION and LIQO_BUILD_COMMIT
//      (scripts/build-liqoctl.ts; the release passes its VERSION and commit);
//   2. the image: /liqo/build-info.json, written by scripts/build-image.ts;
//   3. a checkout: package.json's version and the commit .git's HEAD names (read from the files,
//      not by running git: `version --client` must stay as fast as an empty program);
//   4. otherwise the commit is "unknown".
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };

declare const LIQO_BUILD_VERSION: string;
declare const LIQO_BUILD_COMMIT: string;

export interface BuildInfo {
  version: string;
  commit: string;
}

const repo = join(import.meta.dir, "..");
const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

/** The commit HEAD names in the git checkout at `dir` (worktrees and packed refs included), or undefined. */
export function gitCommit(dir: string): string | undefined {
  const dotGit = join(dir, ".git");
  if (!existsSync(dotGit)) return undefined;
  // A worktree's (or submodule's) .git is a file naming its git directory.
  let gitDir = dotGit;
  if (!statSync(dotGit).isDirectory()) {
    const named = read(dotGit)
      ?.match(/^gitdir:\s*(.+)$/m)?.[1]
      ?.trim();
    if (!named) return undefined;
    gitDir = named.startsWith("/") ? named : join(dir, named);
  }
  const head = read(join(gitDir, "HEAD"))?.trim();
  if (!head) return undefined;
  if (/^[0-9a-f]{40}$/.test(head)) return head;
  const ref = head.match(/^ref:\s*(\S+)$/)?.[1];
  if (!ref) return undefined;
  // Branches live in the common directory of all worktrees; loose refs win over packed ones.
  const common = read(join(gitDir, "commondir"))?.trim();
  const dirs = [gitDir, ...(common ? [common.startsWith("/") ? common : join(gitDir, common)] : [])];
  for (const d of dirs) {
    const loose = read(join(d, ref))?.trim();
    if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
  }
  for (const d of dirs) {
    const packed = read(join(d, "packed-refs"))
      ?.split("\n")
      .find((l) => l.endsWith(` ${ref}`));
    if (packed) return packed.slice(0, 40);
  }
  return undefined;
}

let cached: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (cached) return cached;
  if (typeof LIQO_BUILD_VERSION === "string" && typeof LIQO_BUILD_COMMIT === "string")
    return (cached = { version: LIQO_BUILD_VERSION, commit: LIQO_BUILD_COMMIT });
  const file = read(join(repo, "build-info.json"));
  if (file) {
    const info = JSON.parse(file) as Partial<BuildInfo>;
    return (cached = { version: info.version ?? pkg.version, commit: info.commit ?? "unknown" });
  }
  return (cached = { version: pkg.version, commit: gitCommit(repo) ?? "unknown" });
}

export const liqoVersion: string = buildInfo().version;

export interface ClientVersion {
  version: string;
  commit: string;
  runtime: string;
  platform: string;
}

export function clientVersion(): ClientVersion {
  const { version, commit } = buildInfo();
  return { version, commit, runtime: `bun ${Bun.version}`, platform: `${process.platform}/${process.arch}` };
}

/** `liqoctl version --client` output: one line of text, or the JSON document (output "json"). */
export function clientVersionOutput(output: "text" | "json"): string {
  const client = clientVersion();
  return output === "json"
    ? JSON.stringify({ client }, null, 2)
    : `Client version: ${client.version} (commit ${client.commit}, ${client.runtime}, ${client.platform})`;
}

/**
 * The output format when argv is exactly `version --client` with an optional valid --output/-o,
 * else undefined. liqoctl answers these without loading citty: the CLI framework is most of the
 * start-up cost of a compiled liqoctl (measured in tests/bench/liqoctl.ts), and anything else
 * (--help, a typo, a bad --output) still goes through citty for the usual messages.
 */
export function clientVersionFastPath(argv: string[]): "text" | "json" | undefined {
  if (argv[0] !== "version" || !argv.includes("--client")) return undefined;
  let output: string = "text";
  const rest = argv.slice(1).filter((a) => a !== "--client");
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const eq = a.match(/^(?:--output|-o)=(.*)$/);
    if (eq) output = eq[1]!;
    else if ((a === "--output" || a === "-o") && i + 1 < rest.length) output = rest[++i]!;
    else return undefined;
  }
  return output === "text" || output === "json" ? output : undefined;
}
