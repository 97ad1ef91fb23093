// The command line as Liqo's users type it, turned into the one citty parses: flags written before
// the command (`liqoctl --context=x peer y`, cobra's persistent flags) move after it, a command's
// alias (`move pvc`, `peer oob`, `upgrade`) becomes its name, a command run without its required
// subcommand gets its default (`liqoctl install` is `install generic`), and a flag's alias (Liqo's
// `--target-node` for our `--node`) becomes the flag's own name. docs/liqoctl-compatibility.md
// lists the aliases.
import { parseArgs, type ArgDef } from "citty";
import type { AnyCommand } from "./command-def.ts";
import { CliError } from "./errors.ts";

type Def = ArgDef & { alias?: string | string[] };

async function resolve<T>(v: T | Promise<T> | (() => T | Promise<T>)): Promise<T> {
  return typeof v === "function" ? await (v as () => T | Promise<T>)() : await v;
}

const list = (v: string | string[] | undefined) => [v ?? []].flat();
const spelled = (name: string) => (name.length === 1 ? `-${name}` : `--${name}`);

export async function argDefs(cmd: AnyCommand): Promise<Record<string, Def>> {
  return ((await resolve(cmd.args)) ?? {}) as Record<string, Def>;
}

/**
 * Flags that take a value wherever liqoctl has them: before the command is known, the word after
 * one of these is its value (after the command, that command's own flags say which take one).
 */
const LEADING_VALUE_FLAGS = new Set([
  "--kubeconfig",
  "--context",
  "--namespace",
  "-n",
  "--liqo-namespace",
  "--remote-kubeconfig",
  "--remote-context",
]);

/** Flags that may be repeated, each value kept (ui.ts repeatedFlag): two spellings add up, never conflict. */
const REPEATABLE = new Set(["selector", "set", "resource"]);

async function subCommandNamed(cmd: AnyCommand, word: string): Promise<{ name: string; sub: AnyCommand } | undefined> {
  const subs = (await resolve(cmd.subCommands)) as Record<string, unknown> | undefined;
  if (!subs) return undefined;
  const load = async (name: string) => ({
    name,
    sub: (await resolve(subs[name] as AnyCommand)) as AnyCommand,
  });
  // Own keys first: peer/unpeer answer any word (a cluster name) through a Proxy, after their aliases.
  const own = Object.keys(subs);
  if (own.includes(word)) return load(word);
  for (const name of own) {
    const found = await load(name);
    if (list((await resolve(found.sub.meta))?.alias as string | string[] | undefined).includes(word)) return found;
  }
  return word in subs ? load(word) : undefined;
}

export interface CommandLine {
  /** The arguments citty gets: the command path by its names, then every flag and positional. */
  argv: string[];
  /** The commands from the root to the one that runs. */
  chain: AnyCommand[];
}

/** The spellings of a command's flags that take a value, with those of its default subcommand. */
async function valueFlags(cmd: AnyCommand): Promise<Set<string>> {
  const out = new Set(LEADING_VALUE_FLAGS);
  const fallback = (await resolve(cmd.default)) as string | undefined;
  const sub = fallback ? (await subCommandNamed(cmd, fallback))?.sub : undefined;
  for (const c of sub ? [cmd, sub] : [cmd])
    for (const [name, def] of Object.entries(await argDefs(c))) {
      if (def.type !== "string" && def.type !== "enum") continue;
      for (const n of [name, ...list(def.alias)]) out.add(spelled(n));
    }
  return out;
}

/**
 * Finds the command the words name, moving leading flags after it; no flag is rewritten yet.
 * `withDefault: false` stops at a command that has a default subcommand (its help lists them).
 */
export async function commandLine(
  root: AnyCommand,
  rawArgs: string[],
  { withDefault = true } = {},
): Promise<CommandLine> {
  const chain = [root];
  const path: string[] = [];
  const moved: string[] = [];
  let i = 0;
  while (i < rawArgs.length) {
    const arg = rawArgs[i]!;
    if (arg === "--") break;
    if (arg.startsWith("-")) {
      moved.push(arg);
      if (!arg.includes("=") && (await valueFlags(chain.at(-1)!)).has(arg) && i + 1 < rawArgs.length)
        moved.push(rawArgs[++i]!);
      i++;
      continue;
    }
    const found = await subCommandNamed(chain.at(-1)!, arg);
    if (!found) break;
    chain.push(found.sub);
    path.push(found.name);
    i++;
  }
  // `liqoctl install --pod-cidr ...`: Liqo's install is itself the generic provider. Not when a
  // word is left over (`install kindd` must fail, not install the generic provider).
  while (withDefault && i === rawArgs.length) {
    const fallback = (await resolve(chain.at(-1)!.default)) as string | undefined;
    const found = fallback && (await subCommandNamed(chain.at(-1)!, fallback));
    if (!found) break;
    chain.push(found.sub);
    path.push(found.name);
  }
  if (!moved.length) return { argv: [...path, ...rawArgs.slice(i)], chain };
  return { argv: [...path, ...moved, ...rawArgs.slice(i)], chain };
}

/**
 * Rewrites every alias of the command's flags to the flag's own name. A flag given under two
 * spellings with different values is refused, whichever came last: `--node a --target-node b`
 * has no answer a user would expect from both Liqo and us.
 */
export async function canonicalFlags(cmd: AnyCommand, argv: string[]): Promise<string[]> {
  const defs = await argDefs(cmd);
  const byAlias = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") continue;
    for (const a of list(def.alias)) {
      byAlias.set(spelled(a), name);
      if (def.type === "boolean" && a.length > 1) byAlias.set(`--no-${a}`, `no-${name}`);
    }
  }
  const seen = new Map<string, { spelling: string; value: string }[]>();
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    if (!arg.startsWith("-") || /^-\d/.test(arg)) {
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const inline = eq < 0 ? undefined : arg.slice(eq + 1);
    const target = byAlias.get(flag);
    const name = target ?? flag.replace(/^--?/, "");
    const negated = name.startsWith("no-") && defs[name.slice(3)]?.type === "boolean";
    const base = negated ? name.slice(3) : name;
    const def = defs[base];
    out.push(target ? `--${target}${inline === undefined ? "" : `=${inline}`}` : arg);
    if (!def) continue;
    let value: string;
    if (def.type === "boolean") value = negated ? "false" : inline === undefined ? "true" : String(inline !== "false");
    else if (inline !== undefined) value = inline;
    else if (i + 1 < argv.length) {
      value = argv[++i]!;
      out.push(value);
    } else continue;
    const entries = seen.get(base) ?? [];
    entries.push({ spelling: negated ? `--${flag.replace(/^--no-/, "")}` : flag, value });
    seen.set(base, entries);
  }
  for (const [name, entries] of seen) {
    if (REPEATABLE.has(name)) continue;
    const spellings = new Set(entries.map((e) => e.spelling));
    const values = new Set(entries.map((e) => e.value));
    if (spellings.size > 1 && values.size > 1)
      throw new CliError(
        `${[...spellings].join(" and ")} name the same flag (--${name}) and were given different values (${[...values].join(", ")}); give it once`,
      );
  }
  return out;
}

/** A copy of the command whose long aliases citty's usage prints as --alias (it prefixes one dash to every alias). */
export function withUsageAliases(cmd: AnyCommand): AnyCommand {
  return {
    ...cmd,
    args: async () => {
      const defs = await argDefs(cmd);
      return Object.fromEntries(
        Object.entries(defs).map(([name, def]) => {
          const aliases = list(def.alias);
          if (!aliases.some((a) => a.length > 1)) return [name, def];
          return [name, { ...def, alias: aliases.map((a) => (a.length > 1 ? `-${a}` : a)) }];
        }),
      );
    },
  } as AnyCommand;
}

/** What the command that runs gets from these words: its path by name and its arguments, aliases resolved. */
export async function parsedCommandLine(
  root: AnyCommand,
  rawArgs: string[],
): Promise<{ path: string[]; args: Record<string, unknown> }> {
  const line = await commandLine(root, rawArgs);
  const leaf = line.chain.at(-1)!;
  const depth = line.chain.length - 1;
  const argv = await canonicalFlags(leaf, line.argv);
  const defs = await argDefs(leaf);
  const parsed = parseArgs(argv.slice(depth), defs) as Record<string, unknown>;
  return {
    path: argv.slice(0, depth),
    args: Object.fromEntries(Object.keys(defs).map((name) => [name, parsed[name]])),
  };
}
