// The running program's root command, set by cli/main.ts. Commands that describe the whole tree
// (completion, docs) read it from here: importing main.ts from inside it would wait on its own
// top-level await and never resolve.
import type { AnyCommand } from "./command-def.ts";

let root: AnyCommand | undefined;

export function setRootCommand(cmd: AnyCommand): void {
  root = cmd;
}

export function rootCommand(): AnyCommand {
  if (!root) throw new Error("the root command is not set: cli/main.ts sets it before running a command");
  return root;
}
