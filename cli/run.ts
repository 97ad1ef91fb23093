// Runs a citty command tree and turns every outcome into an exit code. Unlike citty's runMain it
// prints errors a user can fix as one line (no stack) and keeps unexpected errors in full.
import { renderUsage, runCommand } from "citty";
import type { AnyCommand } from "./command-def.ts";
import { canonicalFlags, commandLine, withUsageAliases } from "./argv.ts";
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

/** citty ignores flags it does not know; a typo such as --cluster for --clusters must not pass silently. */
export async function unknownFlags(cmd: AnyCommand, rawArgs: string[]): Promise<string[]> {
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

export async function runCli(cmd: AnyCommand, rawArgs: string[]): Promise<number> {
  let chain: AnyCommand[] = [cmd];
  const usageOf = () => renderUsage(withUsageAliases(chain.at(-1)!), chain.at(-2));
  try {
    const help = rawArgs.includes("--help") || rawArgs.includes("-h") || rawArgs.length === 0;
    const line = await commandLine(cmd, rawArgs, { withDefault: !help });
    chain = line.chain;
    if (help) {
      console.log(`${await usageOf()}\n`);
      return rawArgs.length === 0 ? ExitCode.Usage : ExitCode.Ok;
    }
    const leaf = chain.at(-1)!;
    const unknown = await unknownFlags(leaf, line.argv);
    if (unknown.length) {
      console.error(await usageOf());
      console.error(`ERROR unknown flag${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`);
      return ExitCode.Usage;
    }
    await runCommand(cmd, { rawArgs: await canonicalFlags(leaf, line.argv) });
    return typeof process.exitCode === "number" ? process.exitCode : ExitCode.Ok;
  } catch (err) {
    if (err instanceof Error && err.name === "CLIError") {
      console.error(await usageOf());
      console.error(`ERROR ${err.message}`);
      return ExitCode.Usage;
    }
    const code = exitCodeFor(err);
    if (code === undefined) throw err;
    console.error(`ERROR ${(err as Error).message}`);
    return code;
  }
}
