#!/usr/bin/env bun
// liqoctl: the only place that reads process.argv or calls process.exit. Commands load lazily.
import { defineCommand, type CommandDef } from "citty";
import { runCli } from "./run.ts";
import { liqoVersion } from "./version.ts";

const lazy = (load: () => Promise<{ default: CommandDef<any> }>) => () => load().then((m) => m.default);

export const main = defineCommand({
  meta: { name: "liqoctl", version: liqoVersion, description: "Manage liqo (on Bun): peer clusters, offload namespaces, inspect reflection" },
  subCommands: {
    version: lazy(() => import("./commands/version.ts")),
    plugin: lazy(() => import("./commands/plugin.ts")),
    offload: lazy(() => import("./commands/offload.ts")),
    unoffload: lazy(() => import("./commands/unoffload.ts")),
  },
});

if (import.meta.main) process.exit(await runCli(main, process.argv.slice(2)));
