#!/usr/bin/env bun
// liqoctl: the only place that reads process.argv or calls process.exit. Commands load lazily, and
// so does citty itself (through run.ts): `liqoctl version --client` is answered without it.
import { basename } from "node:path";
import type { AnyCommand } from "./command-def.ts";
import { setRootCommand } from "./root.ts";
import { clientVersionFastPath, clientVersionOutput, liqoVersion } from "./version.ts";

const lazy = (load: () => Promise<{ default: AnyCommand }>) => () => load().then((m) => m.default);

/** kubectl runs plugins found on PATH as kubectl-liqo: help then speaks of `kubectl liqo`. */
const asKubectlPlugin = [process.argv0, process.execPath, process.argv[1] ?? ""].some((p) =>
  basename(p).startsWith("kubectl-liqo"),
);

// A plain object rather than citty's defineCommand (an identity function), so that importing
// this module does not load citty.
export const main: AnyCommand = {
  meta: {
    name: asKubectlPlugin ? "kubectl liqo" : "liqoctl",
    version: liqoVersion,
    description: "Manage liqo (on Bun): peer clusters, offload namespaces, inspect reflection",
  },
  subCommands: {
    version: lazy(() => import("./commands/version.ts")),
    plugin: lazy(() => import("./commands/plugin.ts")),
    offload: lazy(() => import("./commands/offload.ts")),
    unoffload: lazy(() => import("./commands/unoffload.ts")),
    move: lazy(() => import("./commands/move.ts")),
    generate: lazy(() => import("./commands/generate.ts")),
    peer: lazy(() => import("./commands/peer.ts")),
    unpeer: lazy(() => import("./commands/unpeer.ts")),
    status: lazy(() => import("./commands/status.ts")),
    info: lazy(() => import("./commands/info.ts")),
    create: lazy(() => import("./commands/create.ts")),
    delete: lazy(() => import("./commands/delete.ts")),
    test: lazy(() => import("./commands/test.ts")),
    install: lazy(() => import("./commands/install.ts")),
    uninstall: lazy(() => import("./commands/uninstall.ts")),
    completion: lazy(() => import("./commands/completion.ts")),
    docs: lazy(() => import("./commands/docs.ts")),
    cordon: lazy(() => import("./commands/tenant.ts").then((m) => ({ default: m.cordon }))),
    uncordon: lazy(() => import("./commands/tenant.ts").then((m) => ({ default: m.uncordon }))),
    drain: lazy(() => import("./commands/tenant.ts").then((m) => ({ default: m.drain }))),
  },
};

setRootCommand(main);

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const fast = clientVersionFastPath(argv);
  if (fast) {
    console.log(clientVersionOutput(fast));
    process.exit(0);
  }
  const { runCli } = await import("./run.ts");
  process.exit(await runCli(main, argv));
}
