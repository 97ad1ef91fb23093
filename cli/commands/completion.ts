// liqoctl completion bash|zsh|fish|powershell: prints a completion script built from the live
// command tree (see cli/completion.ts).
import { defineCommand } from "citty";
import { completionScript, shells, type Shell } from "../completion.ts";
import { CliError } from "../errors.ts";
import { rootCommand } from "../root.ts";
import { commandTree } from "../tree.ts";

export default defineCommand({
  meta: {
    name: "completion",
    description: "Print a shell completion script (bash: source <(liqoctl completion bash))",
  },
  args: {
    shell: { type: "positional", required: true, description: `the shell: ${shells.join(", ")}` },
  },
  async run({ args }) {
    if (!(shells as readonly string[]).includes(args.shell))
      throw new CliError(`shell ${args.shell} is not supported: use one of ${shells.join(", ")}`);
    process.stdout.write(
      completionScript(args.shell as Shell, await commandTree(rootCommand()), ["liqoctl", "kubectl-liqo"]),
    );
  },
});
