// Reads bun test's JUnit reports (one per shard) and prints, at the end of the run where CI's log
// keeps it: the test files that took longest (their hooks included), the files that spend most in
// their hooks (set-up and teardown), the slowest tests, then every failure with its file and
// message. A failed hook shows as "(unnamed)" in bun's own summary; here it is named by its file.
// With --durations <file>, also writes every file's time there (what scripts/test-plan.ts balances shards by).
import { readFileSync, writeFileSync } from "node:fs";
import { hookTimes, junitFailures, junitFiles, junitTests } from "./junit.ts";

const args = process.argv.slice(2);
const durationsAt = args.indexOf("--durations");
const durationsOut = durationsAt >= 0 ? args.splice(durationsAt, 2)[1] : undefined;
const count = args.length > 1 && /^\d+$/.test(args.at(-1)!) ? Number(args.pop()) : 15;
if (args.length === 0 || (durationsAt >= 0 && !durationsOut)) {
  console.error("usage: bun scripts/test-report.ts <junit.xml>... [count] [--durations <out.json>]");
  process.exit(2);
}
const reports = args.map((path) => readFileSync(path, "utf8"));
const files = reports
  .flatMap(junitFiles)
  .map((f) => ({ ...f, file: f.file.replace(/^\.\//, "") }))
  .sort((a, b) => b.seconds - a.seconds);
const total = files.reduce((s, f) => s + f.seconds, 0);
console.log(`\nslowest test files (of ${files.length}, ${Math.round(total)} s in all):`);
for (const f of files.slice(0, count)) console.log(`${f.seconds.toFixed(1).padStart(8)} s  ${f.file}`);
// Set-up and teardown (clusters started, liqo installed, peered) against the tests themselves: what
// sharing clusters between files could save, and which tests are worth shortening.
const hooks = reports.flatMap(hookTimes).sort((a, b) => b.hooks - a.hooks);
const hooksTotal = hooks.reduce((s, h) => s + h.hooks, 0);
console.log(`\nfiles by time outside their tests (hooks: set-up, teardown; ${Math.round(hooksTotal)} s in all):`);
for (const h of hooks.slice(0, Math.min(count, 10)))
  console.log(`${h.hooks.toFixed(1).padStart(8)} s  ${h.file.replace(/^\.\//, "")} (tests ${h.tests.toFixed(1)} s)`);
const tests = reports.flatMap(junitTests).sort((a, b) => b.seconds - a.seconds);
console.log(`\nslowest tests (of ${tests.length}):`);
for (const t of tests.slice(0, Math.min(count, 10)))
  console.log(`${t.seconds.toFixed(1).padStart(8)} s  ${t.file.replace(/^\.\//, "")} > ${t.name.slice(0, 140)}`);

if (durationsOut) {
  const byFile = Object.fromEntries(
    [...files].sort((a, b) => a.file.localeCompare(b.file)).map((f) => [f.file, Math.round(f.seconds * 10) / 10]),
  );
  writeFileSync(durationsOut, `${JSON.stringify(byFile, null, 2)}\n`);
  console.log(`\nevery file's time written to ${durationsOut}`);
}

const failures = reports.flatMap(junitFailures);
if (failures.length > 0) {
  console.log(`\nfailures (${failures.length}):`);
  for (const f of failures) {
    console.log(`- ${f.file} > ${f.name} [${f.seconds.toFixed(1)} s]`);
    for (const line of f.text.split("\n").slice(0, 40)) console.log(`    ${line}`);
  }
}
