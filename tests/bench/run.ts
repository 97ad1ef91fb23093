// `bun run bench`: runs every benchmark in tests/bench, one process each, and prints their numbers.
import { readdirSync } from "node:fs";
import { join } from "node:path";

const only = process.argv.slice(2);
/** Run only when named: the soak takes an hour. */
const onlyWhenNamed = ["soak.ts"];
const dir = import.meta.dir;
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && !["run.ts", "stats.ts"].includes(f) && !f.endsWith(".test.ts"))
  .filter((f) => (only.length === 0 ? !onlyWhenNamed.includes(f) : only.some((o) => f.includes(o))))
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n######## ${file}`);
  const proc = Bun.spawn([process.execPath, join(dir, file)], { stdout: "inherit", stderr: "inherit" });
  if ((await proc.exited) !== 0) {
    failed++;
    console.log(`######## ${file} failed (exit ${proc.exitCode})`);
  }
}
process.exit(failed ? 1 : 0);
