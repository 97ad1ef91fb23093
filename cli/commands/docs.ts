// liqoctl docs [--dir DIR]: the markdown reference of every command, to stdout or one file per command.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineCommand } from "citty";
import { markdownDocs } from "../docs.ts";
import { CliError, ExitCode } from "../errors.ts";
import { rootCommand } from "../root.ts";
import { commandTree } from "../tree.ts";
import { info } from "../ui.ts";

export default defineCommand({
  meta: { name: "docs", description: "Write the markdown reference of every liqoctl command" },
  args: {
    dir: {
      type: "string",
      description: "directory to write one <command>.md per command into (default: print all to stdout)",
    },
  },
  async run({ args }) {
    const pages = markdownDocs(await commandTree(rootCommand()));
    if (!args.dir) {
      process.stdout.write([...pages.values()].join("\n---\n\n"));
      return;
    }
    try {
      mkdirSync(args.dir, { recursive: true });
      for (const [file, text] of pages) writeFileSync(join(args.dir, file), text);
    } catch (err) {
      throw new CliError(
        `--dir ${args.dir}: cannot write there (${(err as Error).message}); pass a writable directory`,
        ExitCode.Failure,
      );
    }
    info(`wrote ${pages.size} pages to ${args.dir}`);
  },
});
