// Splits the test files into shards of about equal time, for scripts/test.sh to run side by side.
// The times are the files' last measured ones (tests/durations.json, hooks included); a file not
// listed there yet counts as NEW_FILE_SECONDS. Longest first, each to the shard with the least so
// far: the long in-cluster files spread out, the many short unit files fill the gaps.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
/** Unmeasured files: a guess on the long side, so a new e2e file does not pile onto a full shard. */
const NEW_FILE_SECONDS = 60;

/** Every file bun test runs from the repository root (it skips node_modules and hidden folders). */
export function testFiles(dir = root): string[] {
  const glob = new Bun.Glob("**/*.test.{ts,tsx,js,jsx,mts,cts,mjs,cjs}");
  return [...glob.scanSync({ cwd: dir })]
    .filter((f) => !f.split("/").some((part) => part === "node_modules" || part.startsWith(".")))
    .sort();
}

export interface Shard {
  files: string[];
  seconds: number;
}

/** Longest-processing-time-first: each file, longest first, to the shard with the least time. */
export function planShards(files: string[], durations: Record<string, number>, count: number): Shard[] {
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`the shard count must be a whole number ≥ 1, got ${count}`);
  const shards: Shard[] = Array.from({ length: count }, () => ({ files: [], seconds: 0 }));
  const timed = files.map((f) => ({ f, s: durations[f] ?? NEW_FILE_SECONDS }));
  timed.sort((a, b) => b.s - a.s || a.f.localeCompare(b.f));
  for (const { f, s } of timed) {
    const least = shards.reduce((min, x) => (x.seconds < min.seconds ? x : min));
    least.files.push(f);
    least.seconds += s;
  }
  for (const s of shards) s.files.sort();
  return shards;
}

export function readDurations(path = join(root, "tests/durations.json")): Record<string, number> {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Record<string, number>;
  } catch (err) {
    console.error(`test-plan: ${path} unreadable (${(err as Error).message}); every file counts ${NEW_FILE_SECONDS} s`);
    return {};
  }
}

if (import.meta.main) {
  const [countArg, outDir] = process.argv.slice(2);
  const count = Number(countArg);
  if (!outDir || !(count >= 1)) {
    console.error("usage: bun scripts/test-plan.ts <shards> <dir>   (writes <dir>/shard-<n>.txt, one file per line)");
    process.exit(2);
  }
  const shards = planShards(testFiles(), readDurations(), count);
  shards.forEach((s, i) => {
    writeFileSync(join(outDir, `shard-${i + 1}.txt`), s.files.map((f) => `./${f}\n`).join(""));
    console.log(`shard ${i + 1}: ${s.files.length} files, about ${Math.round(s.seconds)} s as last measured`);
  });
}
