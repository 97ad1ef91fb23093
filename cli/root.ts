// The running program's root command, set by cli/main.ts. Commands that describe the whole tree
// (completion, docs) read it from here: importing main.ts from inside it would wait on its own
// top-level await and never resolve.
import type { CommandDef } from "citty";

let root: CommandDef<any> | undefined;

export function setRootCommand(cmd: CommandDef<any>): void {
  root = cmd;
}

export function rootCommand(): CommandDef<any> {
  if (!root) throw new Error("the root command is not set: cli/main.ts sets it before running a command");
  return root;
}
