// The liqoctl command tree resolved once (lazy subcommands loaded), for completion scripts and
// the markdown docs: both are generated from the same citty definitions the parser uses.
import type { ArgDef } from "citty";
import type { AnyCommand } from "./command-def.ts";

export interface FlagNode {
  name: string;
  alias: string[];
  type: "string" | "boolean" | "enum" | "number";
  description: string;
  required: boolean;
  default?: unknown;
  options?: string[];
}
export interface ArgNode {
  name: string;
  description: string;
  required: boolean;
}
export interface CommandNode {
  path: string[];
  name: string;
  /** Other names the command answers to (Liqo's: `oob`, `ns`, `upgrade`); cli/argv.ts resolves them. */
  aliases: string[];
  description: string;
  flags: FlagNode[];
  args: ArgNode[];
  subCommands: CommandNode[];
}

async function resolve<T>(v: T | Promise<T> | (() => T | Promise<T>)): Promise<T> {
  return typeof v === "function" ? await (v as () => T | Promise<T>)() : await v;
}

export async function commandTree(cmd: AnyCommand, path: string[] = []): Promise<CommandNode> {
  const meta = (await resolve(cmd.meta)) ?? {};
  const defs = ((await resolve(cmd.args)) ?? {}) as Record<string, ArgDef>;
  const flags: FlagNode[] = [];
  const args: ArgNode[] = [];
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") {
      args.push({ name, description: def.description ?? "", required: def.required !== false });
      continue;
    }
    flags.push({
      name,
      // citty adds a flag's camelCase spelling to its alias list in place when it parses a command
      // line: not an alias anyone wrote, and the tree must not depend on what ran before it.
      alias: [(def as { alias?: string | string[] }).alias ?? []].flat().filter((a) => a !== camelCase(name)),
      type: (def.type ?? "string") as FlagNode["type"],
      description: def.description ?? "",
      required: !!def.required,
      default: (def as { default?: unknown }).default,
      options: (def as { options?: string[] }).options,
    });
  }
  const subs = ((await resolve(cmd.subCommands)) ?? {}) as Record<string, AnyCommand | (() => Promise<AnyCommand>)>;
  const subCommands: CommandNode[] = [];
  for (const [name, sub] of Object.entries(subs))
    subCommands.push(await commandTree(await resolve(sub as AnyCommand), [...path, name]));
  const aliases = [(meta as { alias?: string | string[] }).alias ?? []].flat();
  return {
    path,
    name: meta.name ?? path.at(-1) ?? "",
    aliases,
    description: meta.description ?? "",
    flags,
    args,
    subCommands,
  };
}

/** Every command in the tree, parents before children. */
export function allCommands(root: CommandNode): CommandNode[] {
  return [root, ...root.subCommands.flatMap(allCommands)];
}

const camelCase = (name: string) => name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
