// Prints the test files that took longest (their hooks included), from bun test's JUnit report.
import { readFileSync } from "node:fs";

const [path, count = "15"] = process.argv.slice(2);
if (!path) {
  console.error("usage: bun scripts/slowest-files.ts <junit.xml> [count]");
  process.exit(2);
}
const xml = readFileSync(path, "utf8");
// Files are the testsuites that carry a file attribute and sit directly under <testsuites>.
const files = [...xml.matchAll(/^ {2}<testsuite name="[^"]*" file="([^"]+)"[^>]* time="([\d.]+)"/gm)]
  .map((m) => ({ file: m[1]!, seconds: Number(m[2]) }))
  .sort((a, b) => b.seconds - a.seconds);
const total = files.reduce((s, f) => s + f.seconds, 0);
console.log(`\nslowest test files (of ${files.length}, ${Math.round(total)} s in all):`);
for (const f of files.slice(0, Number(count))) console.log(`${f.seconds.toFixed(1).padStart(8)} s  ${f.file}`);
