// Markdown reference pages generated from the command tree, one per command (cobra's doc layout:
// liqoctl_offload_namespace.md), so the docs cannot drift from the flags the parser accepts.
import { allCommands, type CommandNode } from "./tree.ts";

export function docFileName(root: CommandNode, n: CommandNode): string {
  return `${[root.name, ...n.path].join("_").replace(/\s+/g, "-")}.md`;
}

function usageLine(root: CommandNode, n: CommandNode): string {
  const args = n.args.map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`));
  return [
    root.name,
    ...n.path,
    ...(n.subCommands.length ? ["<command>"] : []),
    ...args,
    ...(n.flags.length ? ["[flags]"] : []),
  ].join(" ");
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** A markdown table with its columns padded, as the repository's formatter (Biome) writes tables. */
function table(header: string[], rows: string[][]): string[] {
  const width = header.map((h, i) => Math.max(3, h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(width[i]!)).join(" | ")} |`;
  return [line(header), line(width.map((w) => "-".repeat(w))), ...rows.map(line)];
}

export function commandMarkdown(root: CommandNode, n: CommandNode): string {
  const title = [root.name, ...n.path].join(" ");
  const out = [`# ${title}`, "", n.description, "", "```", usageLine(root, n), "```", ""];
  if (n.aliases.length)
    out.push(`Also: ${n.aliases.map((a) => `\`${[root.name, ...n.path.slice(0, -1), a].join(" ")}\``).join(", ")}`, "");
  if (n.args.length) {
    const rows = n.args.map((a) => [`\`${a.name}\``, a.required ? "yes" : "no", cell(a.description)]);
    out.push("## Arguments", "", ...table(["argument", "required", "description"], rows), "");
  }
  if (n.flags.length) {
    const rows = n.flags.map((f) => {
      const names = [`--${f.name}`, ...f.alias.map((a) => (a.length === 1 ? `-${a}` : `--${a}`))]
        .map((x) => `\`${x}\``)
        .join(", ");
      const def = f.default === undefined ? "" : `\`${String(f.default)}\``;
      const desc = `${f.required ? "(required) " : ""}${f.description}${f.options?.length ? ` (one of ${f.options.join(", ")})` : ""}`;
      return [names, f.type, def, cell(desc)];
    });
    out.push("## Flags", "", ...table(["flag", "type", "default", "description"], rows), "");
  }
  if (n.subCommands.length) {
    out.push("## Commands", "");
    for (const s of n.subCommands)
      out.push(`- [${[root.name, ...s.path].join(" ")}](${docFileName(root, s)}): ${s.description}`);
    out.push("");
  }
  return out.join("\n");
}

/** file name → markdown, for every command in the tree. */
export function markdownDocs(root: CommandNode): Map<string, string> {
  return new Map(allCommands(root).map((n) => [docFileName(root, n), commandMarkdown(root, n)]));
}
