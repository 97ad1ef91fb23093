// Running liqoctl (from source or a compiled binary) as a user would, output captured.
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dir, "../..");
export const bunBin = join(repoRoot, "node_modules/.bin/bun");

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** liqoctl from source: `bun cli/main.ts <args>`, or the given program (a compiled binary). */
export async function liqoctl(
  args: string[],
  o: { program?: string[]; env?: Record<string, string>; stdin?: string; cwd?: string } = {},
): Promise<CliRun> {
  const cmd = [...(o.program ?? [bunBin, join(repoRoot, "cli/main.ts")]), ...args];
  const proc = Bun.spawn(cmd, {
    cwd: o.cwd ?? repoRoot,
    stdout: "pipe",
    stderr: "pipe",
    stdin: o.stdin === undefined ? "ignore" : new TextEncoder().encode(o.stdin),
    env: { ...process.env, NO_COLOR: "1", ...o.env },
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** Any program, output captured. */
export async function run(cmd: string[], o: { stdin?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  const proc = Bun.spawn(cmd, {
    stdout: "pipe",
    stderr: "pipe",
    stdin: o.stdin === undefined ? "ignore" : new TextEncoder().encode(o.stdin),
    env: { ...process.env, ...o.env },
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}
