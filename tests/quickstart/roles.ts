// Starts liqo's roles as local processes next to a rig, as a developer runs components outside
// their cluster; each is recorded in the rig so `rig down` stops it, and waited for until ready.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../rig/ports.ts";
import { isAlive, spawnDetached, tailFile } from "../rig/process.ts";
import { addRigProcess, type Rig } from "../rig/rig.ts";
import { RigError } from "../rig/errors.ts";

const liqo = join(import.meta.dir, "../../cli/liqo.ts");

export async function startRole(
  rig: Rig,
  name: string,
  args: string[],
): Promise<{ admin: string; log: string; pid: number }> {
  const adminPort = await freePort();
  mkdirSync(join(rig.dir, "logs"), { recursive: true });
  const log = join(rig.dir, "logs", `${name.replace("/", "-")}.log`);
  const pid = spawnDetached(process.execPath, [liqo, ...args, `--admin-address=127.0.0.1:${adminPort}`], log);
  addRigProcess(rig.dir, { name, pid, log });
  const admin = `http://127.0.0.1:${adminPort}`;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) throw new RigError(`${name} exited during start-up\n--- ${log} (tail) ---\n${tailFile(log)}`);
    const ok = await fetch(`${admin}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { admin, log, pid };
    await Bun.sleep(250);
  }
  throw new RigError(`${name} did not become ready within 120s\n--- ${log} (tail) ---\n${tailFile(log)}`);
}
