// Runs a citty command tree and turns every outcome into an exit code. Unlike citty's runMain it
// prints errors a user can fix as one line (no stack) and keeps unexpected errors in full.
import { renderUsage, runCommand, showUsage, type CommandDef } from "citty";
import { CliError, ExitCode } from "./errors.ts";
import { KubeApiError, KubeConfigError } from "../core/kube/errors.ts";

/** Errors that are the user's to fix, with their exit code; anything else is a bug and shows its stack. */
export function exitCodeFor(err: unknown): number | undefined {
  if (err instanceof CliError) return err.code;
  if (err instanceof KubeConfigError) return ExitCode.Unreachable;
  if (err instanceof KubeApiError) return err.status === 0 ? ExitCode.Unreachable : ExitCode.Failure;
  if (err instanceof Error && err.name === "RigError") return ExitCode.Failure;
  return undefined;
}

async function subCommandFor(cmd: CommandDef<any>, rawArgs: string[]): Promise<[CommandDef<any>, CommandDef<any>?]> {
  let current = cmd;
  let parent: CommandDef<any> | undefined;
  for (const arg of rawArgs) {
    if (arg.startsWith("-")) break;
    const subs = typeof current.subCommands === "function" ? await current.subCommands() : await current.subCommands;
    const next = subs?.[arg];
    if (!next) break;
    parent = current;
    current = typeof next === "function" ? await (next as () => Promise<CommandDef<any>>)() : await next;
  }
  return [current, parent];
}

/** citty ignores flags it does not know; a typo such as --cluster for --clusters must not pass silently. */
export async function unknownFlags(cmd: CommandDef<any>, rawArgs: string[]): Promise<string[]> {
  const defs = (typeof cmd.args === "function" ? await cmd.args() : await cmd.args) ?? {};
  const known = new Set<string>();
  for (const [name, def] of Object.entries(defs as Record<string, { alias?: string | string[]; type?: string }>)) {
    known.add(name);
    if (def.type === "boolean") known.add(`no-${name}`);
    for (const a of [def.alias ?? []].flat()) known.add(a);
  }
  const out: string[] = [];
  for (const arg of rawArgs) {
    if (arg === "--") break;
    if (!arg.startsWith("-") || /^-\d/.test(arg)) continue;
    const name = arg.replace(/^--?/, "").split("=")[0]!;
    if (!known.has(name)) out.push(arg.split("=")[0]!);
  }
  return out;
}

export async function runCli(cmd: CommandDef<any>, rawArgs: string[]): Promise<number> {
  try {
    if (rawArgs.includes("--help") || rawArgs.includes("-h") || rawArgs.length === 0) {
      await showUsage(...(await subCommandFor(cmd, rawArgs)));
      return rawArgs.length === 0 ? ExitCode.Usage : ExitCode.Ok;
    }
    const [leaf] = await subCommandFor(cmd, rawArgs);
    const unknown = await unknownFlags(leaf, rawArgs);
    if (unknown.length) {
      console.error(await renderUsage(leaf));
      console.error(`ERROR unknown flag${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`);
      return ExitCode.Usage;
    }
    await runCommand(cmd, { rawArgs });
    return typeof process.exitCode === "number" ? process.exitCode : ExitCode.Ok;
  } catch (err) {
    if (err instanceof Error && err.name === "CLIError") {
      console.error(await renderUsage(...(await subCommandFor(cmd, rawArgs))));
      console.error(`ERROR ${err.message}`);
      return ExitCode.Usage;
    }
    const code = exitCodeFor(err);
    if (code === undefined) throw err;
    console.error(`ERROR ${(err as Error).message}`);
    return code;
  }
}
