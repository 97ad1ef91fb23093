#!/usr/bin/env bun
// `liqo <role>`: the one program every component of the chart runs, one subcommand per role.
import { defineCommand } from "citty";
import type { AnyCommand } from "./command-def.ts";
import { runCli } from "./run.ts";
import { liqoVersion } from "./version.ts";

const lazy = (load: () => Promise<{ default: AnyCommand }>) => () => load().then((m) => m.default);

export const liqo = defineCommand({
  meta: { name: "liqo", version: liqoVersion, description: "liqo (on Bun) components; each role is a subcommand" },
  subCommands: {
    auth: lazy(() => import("../core/roles/auth.ts")),
    reflection: lazy(() => import("../core/roles/reflection.ts")),
    webhook: lazy(() => import("../core/roles/webhook.ts")),
    "controller-manager": lazy(() => import("../core/roles/controller-manager.ts")),
    "virtual-kubelet": lazy(() => import("../core/roles/virtual-kubelet.ts")),
    "network-manager": lazy(() => import("../core/roles/network-manager.ts")),
    gateway: lazy(() => import("../core/roles/gateway.ts")),
    route: lazy(() => import("../core/roles/route.ts")),
    proxy: lazy(() => import("../core/roles/proxy.ts")),
    "test-server": lazy(() => import("../core/roles/test-server.ts")),
  },
});

if (import.meta.main) process.exit(await runCli(liqo, process.argv.slice(2)));
