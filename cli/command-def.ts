// A command of liqoctl's tree, whatever its arguments (one name for what citty's subCommands hold).
import type { CommandDef } from "citty";

// biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef<T> is invariant in T (run gets a CommandContext<T>), so a tree of commands with different arguments is CommandDef<any>, as in citty's own SubCommandsDef.
export type AnyCommand = CommandDef<any>;
