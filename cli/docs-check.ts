// Checks the docs against the command trees the parsers use (cli/docs-check.test.ts):
// - every `liqoctl ...` (and `liqo <role> ...`) command line shown in a code block or an inline
//   code span names commands and flags that exist, read in-process from the citty definitions
//   with the same alias rules cli/argv.ts applies when the command runs;
// - the committed reference (docs/reference, written by `liqoctl docs`) is what the generator
//   writes now.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { argDefs, commandLine } from "./argv.ts";
import type { AnyCommand } from "./command-def.ts";
import { unknownFlags } from "./run.ts";

/** A command line found in a markdown file. */
export interface DocCommand {
  file: string;
  line: number;
  /** The program as written (`liqoctl`, `bun run liqo`, `dist/liqoctl-linux-x64`). */
  program: string;
  /** Which tree it is checked against. */
  tree: "liqoctl" | "liqo";
  /** The words after the program, placeholders (`...`, `…`) and optional-brackets removed. */
  words: string[];
  /** The text it was read from, for messages. */
  text: string;
}

/** Shell-like words: quotes, `$(...)`, `<(...)`, `${...}` stay one word; `|`, `&&`, `;`, `#` end a command. */
export function shellCommands(text: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word = "";
  let inWord = false;
  const endWord = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      const end = close < 0 ? text.length : close;
      word += text.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if ((c === "$" || c === "<") && text[i + 1] === "(") {
      // A substitution: kept whole in this word; its inside is a command of its own.
      let depth = 0;
      let j = i + 1;
      for (; j < text.length; j++) {
        if (text[j] === "(") depth++;
        else if (text[j] === ")" && --depth === 0) break;
      }
      commands.push(...shellCommands(text.slice(i + 2, j)));
      word += text.slice(i, j + 1);
      inWord = true;
      i = j;
    } else if (c === "\\" && i + 1 < text.length) {
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      endWord();
    } else if (c === "#" && !inWord) {
      break;
    } else if (
      c === ";" ||
      (c === "&" && text[i + 1] === "&") ||
      (c === "|" && !inWord && /\s|$/.test(text[i + 1] ?? ""))
    ) {
      if (c === "&" || (c === "|" && text[i + 1] === "|")) i++;
      endCommand();
    } else {
      word += c;
      inWord = true;
    }
  }
  endCommand();
  return commands;
}

/** The programs that run liqoctl or the liqo roles, as the docs write them. */
function programOf(
  words: string[],
  roles: ReadonlySet<string>,
): { program: string; tree: DocCommand["tree"]; rest: string[] } | undefined {
  let w = words;
  if (w[0] === "$") w = w.slice(1);
  while (w.length && /^[A-Z_][A-Z0-9_]*=/.test(w[0]!)) w = w.slice(1);
  if (w[0] === "sudo") w = w.slice(1);
  const [a, b, c] = w;
  if (a === "liqoctl" || /^(\S*\/)?liqoctl-(linux|darwin)-(x64|arm64)$/.test(a ?? ""))
    return { program: a!, tree: "liqoctl", rest: w.slice(1) };
  if (a === "kubectl" && b === "liqo") return { program: "kubectl liqo", tree: "liqoctl", rest: w.slice(2) };
  if (/(^|\/)bun$/.test(a ?? "") && b === "run" && (c === "liqoctl" || c === "liqo"))
    return { program: `bun run ${c}`, tree: c, rest: w.slice(3) };
  if (/(^|\/)bun$/.test(a ?? "") && (b === "cli/main.ts" || b === "cli/liqo.ts"))
    return { program: `bun ${b}`, tree: b === "cli/main.ts" ? "liqoctl" : "liqo", rest: w.slice(2) };
  // Plain `liqo` also starts prose quoted from messages (`liqo is not installed here`): only a role counts.
  if (a === "liqo" && b && (roles.has(b) || /^<[^>]+>$/.test(b)))
    return { program: "liqo", tree: "liqo", rest: w.slice(1) };
  return undefined;
}

/**
 * Placeholders a doc writes for "more here" and the brackets of optional parts: `[--basic]` and
 * `[cluster]` are checked as written, a bracketed phrase (`[admin flags, default ...]`) is prose.
 */
function cleanWords(words: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w.startsWith("[") && !w.includes("]") && !w.startsWith("[-")) {
      while (i < words.length && !words[i]!.includes("]")) i++;
      continue;
    }
    // `<a liqo image>`: one placeholder of several words.
    if (/^\[?</.test(w) && !w.includes(">")) {
      let joined = w;
      while (i + 1 < words.length && !joined.includes(">")) joined += ` ${words[++i]}`;
      out.push(joined.replace(/^\[+/, "").replace(/\]+$/, ""));
      continue;
    }
    const bare = w.replace(/^\[+/, "").replace(/\]+$/, "");
    if (bare !== "" && bare !== "..." && bare !== "…" && bare !== "flags") out.push(bare);
  }
  return out;
}

function commandsIn(
  file: string,
  line: number,
  text: string,
  promptOnly: boolean,
  roles: ReadonlySet<string>,
): DocCommand[] {
  const out: DocCommand[] = [];
  if (promptOnly && !/^\s*\$\s/.test(text)) return out;
  for (const words of shellCommands(text.replace(/^\s*\$\s/, ""))) {
    const found = programOf(words, roles);
    if (found) out.push({ file, line, program: found.program, tree: found.tree, words: cleanWords(found.rest), text });
  }
  return out;
}

/** Languages whose every line is a shell command (elsewhere only `$ `-prompted lines are). */
const SHELL_FENCES = new Set(["", "sh", "bash", "shell", "console", "zsh"]);

/**
 * Every liqoctl or liqo command line in a markdown text: fenced code blocks and inline code spans.
 * `roles`: the names `liqo` takes as its first word (written as plain `liqo <role>`).
 */
export function docCommands(file: string, markdown: string, roles: ReadonlySet<string>): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = markdown.split("\n");
  let fence: { marker: string; shell: boolean } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const open = line.match(/^\s*(```+|~~~+)\s*([\w-]*)/);
    if (open) {
      if (!fence) fence = { marker: open[1]!, shell: SHELL_FENCES.has(open[2]!.toLowerCase()) };
      else if (line.trim().startsWith(fence.marker)) fence = undefined;
      continue;
    }
    if (fence) {
      let text = line;
      const first = i;
      while (text.endsWith("\\") && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]}`;
      out.push(...commandsIn(file, first + 1, text, !fence.shell, roles));
      continue;
    }
    for (const m of line.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) out.push(...commandsIn(file, i + 1, m[1]!, false, roles));
  }
  return out;
}

async function resolve<T>(v: T | Promise<T> | (() => T | Promise<T>)): Promise<T> {
  return typeof v === "function" ? await (v as () => T | Promise<T>)() : await v;
}

/**
 * What is wrong with a command line: a command that does not exist, a flag the command does not
 * have, more arguments than it takes. Empty when the parser would accept every word.
 */
export async function commandProblems(root: AnyCommand, words: string[]): Promise<string[]> {
  if (words.includes("--help") || words.includes("-h"))
    words = words.slice(
      0,
      words.findIndex((w) => w === "--help" || w === "-h"),
    );
  let line = await commandLine(root, words);
  // `liqoctl install <provider> --flag`, `liqo <role>`: a placeholder where a command goes stands
  // for the default one (its flags are checked), or for any when there is no default.
  for (;;) {
    const leaf = line.chain.at(-1)!;
    const next = line.argv.slice(line.chain.length - 1).find((w) => !w.startsWith("-"));
    const subs = ((await resolve(leaf.subCommands)) ?? {}) as Record<string, unknown>;
    if (!next || !/^<[^>]+>$/.test(next) || !Object.keys(subs).length) break;
    const fallback = (await resolve(leaf.default)) as string | undefined;
    if (!fallback) return [];
    const at = words.indexOf(next);
    words = [...words.slice(0, at), fallback, ...words.slice(at + 1)];
    line = await commandLine(root, words);
  }
  const leaf = line.chain.at(-1)!;
  const depth = line.chain.length - 1;
  const path = line.argv.slice(0, depth);
  const problems = (await unknownFlags(leaf, line.argv)).map((f) => `${path.join(" ") || "the root"} has no flag ${f}`);
  const defs = await argDefs(leaf);
  const positionals = Object.values(defs).filter((d) => d.type === "positional").length;
  const takesValue = new Set<string>();
  for (const [name, def] of Object.entries(defs))
    if (def.type !== "boolean" && def.type !== "positional")
      for (const n of [name, ...[(def as { alias?: string | string[] }).alias ?? []].flat()])
        takesValue.add(n.length === 1 ? `-${n}` : `--${n}`);
  const rest: string[] = [];
  const argv = line.argv.slice(depth);
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i]!;
    if (w === "--") {
      rest.push(...argv.slice(i + 1));
      break;
    }
    if (w.startsWith("-") && !/^-\d/.test(w)) {
      // `--auth-url --cluster-id` in a synopsis: a flag named without its value.
      if (!w.includes("=") && takesValue.has(w) && i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) i++;
      continue;
    }
    // A shell variable may expand to flags as well as to an argument: nothing to check.
    if (!/^\$\{?[A-Za-z_]/.test(w)) rest.push(w);
  }
  const subs = Object.keys(((await resolve(leaf.subCommands)) ?? {}) as Record<string, unknown>);
  if (rest.length && subs.length && !positionals)
    problems.push(
      `${[...path, rest[0]].join(" ")} is not a command (${path.join(" ") || "the root"} has ${subs.join(", ")})`,
    );
  else if (rest.length > positionals)
    problems.push(
      `${path.join(" ") || "the root"} takes ${positionals} argument${positionals === 1 ? "" : "s"}, the line gives ${rest.length} (${rest.join(" ")})`,
    );
  return problems;
}

/** Differences between the pages the generator writes now and the files in dir. */
export function referenceDrift(pages: Map<string, string>, dir: string): string[] {
  const problems: string[] = [];
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".md")) : [];
  for (const [file, text] of pages) {
    if (!files.includes(file)) problems.push(`${file} is missing`);
    else if (readFileSync(join(dir, file), "utf8") !== text)
      problems.push(`${file} differs from what liqoctl docs writes`);
  }
  for (const f of files) if (!pages.has(f)) problems.push(`${f} names no command any more`);
  return problems;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const h = !fenced && line.match(/^#{1,6}\s+(.*)$/);
    if (!h) continue;
    let anchor = headingAnchor(h[1]!);
    for (let n = 1; out.has(anchor); n++) anchor = `${headingAnchor(h[1]!)}-${n}`;
    out.add(anchor);
  }
  return out;
}

/**
 * Links in a markdown file that lead nowhere: a relative target that is not a file of the
 * repository (or lies outside it), or a `#anchor` no heading of the target has. A path in inline
 * code that climbs out of the repository's root (`../shared/DESIGN.md`) counts as a link too.
 */
export function brokenLinks(repo: string, file: string, markdown: string): string[] {
  const problems: string[] = [];
  const here = join(repo, file, "..");
  const text = markdown.replace(/^\s*(```|~~~)[\s\S]*?^\s*\1/gm, "");
  // Links are relative to the page; paths in inline code are written from the repository's root.
  const targets = [
    ...[...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => ({ target: m[1]!, from: here })),
    ...[...text.matchAll(/`(\.\.\/[^`\s]+)`/g)].map((m) => ({ target: m[1]!, from: repo })),
  ];
  for (const { target, from } of targets) {
    if (/^[a-z]+:/i.test(target)) continue;
    const [path, anchor] = target.split("#") as [string, string | undefined];
    if (!path) {
      if (anchor && !anchorsOf(markdown).has(anchor)) problems.push(`${file}: ${target}: no heading with that anchor`);
      continue;
    }
    const abs = join(from, decodeURIComponent(path));
    if (!abs.startsWith(`${repo}/`) && abs !== repo) {
      problems.push(`${file}: ${target} is outside the repository`);
      continue;
    }
    if (!existsSync(abs)) {
      problems.push(`${file}: ${target}: no such file`);
      continue;
    }
    if (anchor && abs.endsWith(".md") && !anchorsOf(readFileSync(abs, "utf8")).has(anchor))
      problems.push(`${file}: ${target}: no heading with that anchor`);
  }
  return problems;
}
