// A reflector plugin project made the way an author makes one: `liqoctl plugin init` in a folder
// outside this checkout, then `bun install` (assemblyscript from the npm registry, the SDK from the
// copy liqoctl wrote). Shared by cli/plugin-project/project.test.ts and the e2e peering test.
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dir, "../..");
// `bun` on PATH, as an author has it (npm installs this checkout's as node_modules/.bin/bun).
const env = { ...process.env, PATH: `${join(repo, "node_modules/.bin")}:${process.env.PATH}`, NO_COLOR: "1" };

export interface Ran {
  code: number;
  out: string;
  err: string;
}

export async function run(cwd: string, ...argv: string[]): Promise<Ran> {
  const proc = Bun.spawn(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, out, err };
}

/** `liqoctl plugin <args>` from this checkout, run in cwd. */
export const pluginCli = (cwd: string, ...args: string[]) =>
  run(cwd, process.execPath, join(repo, "cli/main.ts"), "plugin", ...args);

/** `liqoctl plugin init <name> --kind <kind>` in parent, then `bun install`; the project's folder. */
export async function scaffoldPluginProject(parent: string, name: string, kind: string): Promise<string> {
  const init = await pluginCli(parent, "init", name, "--kind", kind);
  if (init.code !== 0) throw new Error(`liqoctl plugin init failed (${init.code}): ${init.err}`);
  const dir = join(parent, name);
  const install = await run(dir, process.execPath, "install");
  if (install.code !== 0) throw new Error(`bun install in ${dir} failed (${install.code}): ${install.err}`);
  return dir;
}
