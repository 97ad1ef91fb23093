// liqoctl as a compiled program: binary size and start-up cost. Builds the host's liqoctl and an
// empty compiled Bun program in the same run, then times `liqoctl version --client` against the
// empty program, interleaved so machine load hits both alike. Target: median ratio ≤ 2×.
// `version --client` does not load citty (cli/main.ts's fast path); `version --client --namespace
// liqo` is the same answer through citty, timed alongside to show what the fast path saves.
// Prints numbers, asserts nothing.
//
// Usage: bun tests/bench/liqoctl.ts [--runs 30]
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allTargets, buildLiqoctl, hostTarget } from "../../scripts/build-liqoctl.ts";
import { heading, row, summarize } from "./stats.ts";

const runsArg = process.argv.indexOf("--runs");
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 30;
const work = mkdtempSync(join(tmpdir(), "liqoctl-bench-"));

async function timeRun(cmd: string[]): Promise<number> {
  const started = performance.now();
  const proc = Bun.spawn(cmd, { stdout: "ignore", stderr: "ignore" });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code}`);
  return performance.now() - started;
}

try {
  heading("liqoctl binaries (bun build --compile, built-in reflectors and the chart embedded)");
  let host = "";
  for (const t of allTargets) {
    const started = performance.now();
    const out = await buildLiqoctl(t, work);
    row(
      `liqoctl-${t} size`,
      (statSync(out).size / 1e6).toFixed(1),
      `MB (built in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );
    if (t === hostTarget()) host = out;
  }
  await Bun.write(join(work, "empty.ts"), "export {};\n");
  const empty = join(work, "empty");
  await Bun.build({
    entrypoints: [join(work, "empty.ts")],
    compile: { target: `bun-${hostTarget()}` as never, outfile: empty },
  });
  row(`empty Bun program (${hostTarget()}) size`, (statSync(empty).size / 1e6).toFixed(1), "MB");

  heading(`start time, ${RUNS} runs each, interleaved`);
  for (let i = 0; i < 3; i++) {
    await timeRun([empty]);
    await timeRun([host, "version", "--client"]);
  } // page cache warm
  const a: number[] = [];
  const b: number[] = [];
  const c: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    a.push(await timeRun([empty]));
    b.push(await timeRun([host, "version", "--client"]));
    c.push(await timeRun([host, "version", "--client", "--namespace", "liqo"]));
  }
  const sa = summarize(a);
  const sb = summarize(b);
  const sc = summarize(c);
  row("empty program p50 / p99", `${sa.p50.toFixed(1)} / ${sa.p99.toFixed(1)}`, "ms");
  row("liqoctl version --client p50 / p99", `${sb.p50.toFixed(1)} / ${sb.p99.toFixed(1)}`, "ms");
  row("ratio of medians (target ≤ 2)", (sb.p50 / sa.p50).toFixed(2), "×");
  row("the same through citty: p50, ratio", `${sc.p50.toFixed(1)} ms, ${(sc.p50 / sa.p50).toFixed(2)}`, "×");
} finally {
  rmSync(work, { recursive: true, force: true });
}
