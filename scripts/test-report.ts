// Reads bun test's JUnit report and prints, at the end of the run where CI's log keeps it:
// the test files that took longest (their hooks included), then every failure with its file and message.
// A failed hook shows as "(unnamed)" in bun's own summary; here it is named by its file.
import { readFileSync } from "node:fs";
import { junitFailures, junitFiles } from "./junit.ts";

const [path, count = "15"] = process.argv.slice(2);
if (!path) {
  console.error("usage: bun scripts/test-report.ts <junit.xml> [count]");
  process.exit(2);
}
const xml = readFileSync(path, "utf8");
const files = junitFiles(xml).sort((a, b) => b.seconds - a.seconds);
const total = files.reduce((s, f) => s + f.seconds, 0);
console.log(`\nslowest test files (of ${files.length}, ${Math.round(total)} s in all):`);
for (const f of files.slice(0, Number(count))) console.log(`${f.seconds.toFixed(1).padStart(8)} s  ${f.file}`);

const failures = junitFailures(xml);
if (failures.length > 0) {
  console.log(`\nfailures (${failures.length}):`);
  for (const f of failures) {
    console.log(`- ${f.file} > ${f.name} [${f.seconds.toFixed(1)} s]`);
    for (const line of f.text.split("\n").slice(0, 40)) console.log(`    ${line}`);
  }
}
