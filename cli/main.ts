#!/usr/bin/env bun
// liqoctl: the only place that reads process.argv or calls process.exit. Commands load lazily.
import { basename } from "node:path";
import { defineCommand, type CommandDef } from "citty";
import { setRootCommand } from "./root.ts";
import { runCli } from "./run.ts";
import { liqoVersion } from "./version.ts";

const lazy = (load: () => Promise<{ default: CommandDef<any> }>) => () => load().then((m) => m.default);

/** kubectl runs plugins found on PATH as kubectl-liqo: help then speaks of `kubectl liqo`. */
const asKubectlPlugin = [process.argv0, process.execPath, process.argv[1] ?? ""].some((p) => basename(p).startsWith("kubectl-liqo"));

export const main = defineCommand({
  meta: { name: asKubectlPlugin ? "kubectl liqo" : "liqoctl", version: liqoVersion, description: "Manage liqo (on Bun): peer clusters, offload namespaces, inspect reflection" },
  subCommands: {
    version: lazy(() => import("./commands/version.ts")),
    plugin: lazy(() => import("./commands/plugin.ts")),
    offload: lazy(() => import("./commands/offload.ts")),
    unoffload: lazy(() => import("./commands/unoffload.ts")),
    generate: lazy(() => import("./commands/generate.ts")),
    peer: lazy(() => import("./commands/peer.ts")),
    unpeer: lazy(() => import("./commands/unpeer.ts")),
    status: lazy(() => import("./commands/status.ts")),
    install: lazy(() => import("./commands/install.ts")),
    uninstall: lazy(() => import("./commands/uninstall.ts")),
    completion: lazy(() => import("./commands/completion.ts")),
    docs: lazy(() => import("./commands/docs.ts")),
  },
});

setRootCommand(main);

if (import.meta.main) process.exit(await runCli(main, process.argv.slice(2)));
