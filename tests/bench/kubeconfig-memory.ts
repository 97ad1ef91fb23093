// What each liqo role's process holds before it does any work, now and before the roles stopped
// importing @kubernetes/client-node's KubeConfig (whose module loads every generated API class), in
// one run. "Before" is the code of the commit before core/kube/kubeconfig.ts came, extracted with
// git archive (or BENCH_BEFORE=<a checkout>). Each process imports its role's module from one tree,
// builds a client from a kubeconfig, runs a full garbage collection and reports its RSS and how long
// the imports took; the two trees' runs interleave so machine load hits both alike. Prints numbers,
// asserts nothing.
//
// Usage: bun tests/bench/kubeconfig-memory.ts [--runs 3]
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { heading, row, summarize } from "./stats.ts";

const runsArg = process.argv.indexOf("--runs");
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 3;
const root = resolve(import.meta.dir, "../..");
const roles = [
  "virtual-kubelet",
  "controller-manager",
  "webhook",
  "auth",
  "network-manager",
  "reflection",
  "gateway",
  "route",
  "proxy",
];
const work = mkdtempSync(join(tmpdir(), "kubeconfig-memory-"));

/** The tree before the change: BENCH_BEFORE, or the parent of the commit that added core/kube/kubeconfig.ts. */
function beforeTree(): string {
  if (process.env.BENCH_BEFORE) return resolve(process.env.BENCH_BEFORE);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
  const added = git("log", "--diff-filter=A", "--format=%H", "-1", "--", "core/kube/kubeconfig.ts");
  if (!added)
    throw new Error(
      "core/kube/kubeconfig.ts is not committed yet: commit it, or set BENCH_BEFORE=<a checkout of the code before>",
    );
  const dir = join(work, "before");
  mkdirSync(dir);
  execFileSync(
    "sh",
    ["-c", `git archive ${added}^ core netfabric reflectors plugins cli package.json | tar -x -C ${dir}`],
    { cwd: root },
  );
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  return dir;
}

const kubeconfig = join(work, "kubeconfig");
writeFileSync(
  kubeconfig,
  JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": "" } }],
    users: [{ name: "u", user: { token: "t" } }],
    contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
    "current-context": "c",
  }),
);

const probe = join(work, "probe.ts");
writeFileSync(
  probe,
  `const [tree, role] = process.argv.slice(2);
const started = performance.now();
await import(tree + "/core/roles/" + role + ".ts");
const { createKubeClient } = await import(tree + "/core/kube/client.ts");
createKubeClient({ kubeconfig: ${JSON.stringify(kubeconfig)} });
const importMs = performance.now() - started;
Bun.gc(true);
const rss = Number(/VmRSS:\\s+(\\d+)/.exec(await Bun.file("/proc/self/status").text())[1]) / 1024;
console.log(JSON.stringify({ rss, importMs }));
`,
);

async function measure(tree: string, role: string): Promise<{ rss: number; importMs: number }> {
  const proc = Bun.spawn([process.execPath, probe, tree, role], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`the probe of ${role} exited ${code}: ${err.trim()}`);
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

try {
  const before = beforeTree();
  heading(`each role's process at start: RSS after a full GC and import time (median of ${RUNS})`);
  const totals = { before: 0, now: 0 };
  for (const role of roles) {
    const samples = {
      before: [] as { rss: number; importMs: number }[],
      now: [] as { rss: number; importMs: number }[],
    };
    for (let i = 0; i < RUNS; i++) {
      samples.before.push(await measure(before, role));
      samples.now.push(await measure(root, role));
    }
    const med = (xs: { rss: number; importMs: number }[], k: "rss" | "importMs") => summarize(xs.map((x) => x[k])).p50;
    const was = med(samples.before, "rss");
    const now = med(samples.now, "rss");
    totals.before += was;
    totals.now += now;
    row(`${role}: RSS before (client-node's KubeConfig)`, was.toFixed(1), "MiB");
    row(`${role}: RSS now (its config_types only)`, now.toFixed(1), "MiB");
    row(`${role}: now ÷ before`, `${(now / was).toFixed(2)}× (${(was - now).toFixed(1)} MiB less)`);
    row(
      `${role}: import time before / now`,
      `${med(samples.before, "importMs").toFixed(0)} / ${med(samples.now, "importMs").toFixed(0)}`,
      "ms",
    );
  }
  heading(`the ${roles.length} roles together (one pod each)`);
  row("RSS before", totals.before.toFixed(0), "MiB");
  row("RSS now", totals.now.toFixed(0), "MiB");
  row("saved", (totals.before - totals.now).toFixed(0), "MiB");
} finally {
  rmSync(work, { recursive: true, force: true });
}
