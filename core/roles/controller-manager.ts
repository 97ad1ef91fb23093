// `liqo controller-manager`: the cluster-wide controllers of liqo. Today: namespace offloading
// (consumer side) and ShadowPods (provider side); peering and resource sharing join them later.
import { defineCommand } from "citty";
import { CliError } from "../../cli/errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { createNamespaceOffloadingController } from "../offloading/index.ts";
import { createShadowPodController } from "../shadowpod/controller.ts";
import { serveAdmin, untilSignal } from "./shared.ts";

export default defineCommand({
  meta: { name: "controller-manager", description: "Run liqo's controllers: namespace offloading and ShadowPods" },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "context in the kubeconfig" },
    "cluster-id": { type: "string", required: true, description: "this cluster's ID" },
    "cluster-name": { type: "string", required: true, description: "this cluster's name" },
    controllers: { type: "string", default: "namespaceoffloading,shadowpod", description: "controllers to run (comma-separated)" },
    "admin-address": { type: "string", default: "127.0.0.1:8081", description: "host:port of the admin API" },
  },
  async run({ args }) {
    const wanted = args.controllers.split(",").map((s) => s.trim()).filter(Boolean);
    const unknown = wanted.filter((c) => !["namespaceoffloading", "shadowpod"].includes(c));
    if (unknown.length) throw new CliError(`unknown controller(s) ${unknown.join(", ")}; choose from namespaceoffloading, shadowpod`);
    const log = createLogger({ role: "controller-manager" });
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const registry = createRegistry();
    registerProcessMetrics(registry);
    const running: { name: string; start(): Promise<void>; stop(): Promise<void> }[] = [];
    if (wanted.includes("namespaceoffloading")) {
      running.push({ name: "namespaceoffloading", ...createNamespaceOffloadingController({ client, localCluster: { clusterID: args["cluster-id"], clusterName: args["cluster-name"] }, logger: log }) });
    }
    if (wanted.includes("shadowpod")) running.push({ name: "shadowpod", ...createShadowPodController({ client, logger: log }) });
    const started = new Set<string>();
    for (const c of running) {
      await c.start();
      started.add(c.name);
    }
    const admin = await serveAdmin({
      address: args["admin-address"], registry, logger: log,
      views: { controllers: () => [...started] },
      checks: { "controllers-started": () => started.size === running.length || { ok: false, reason: "controllers are starting" } },
    });
    log.info("controller-manager running", { controllers: [...started], admin: admin.url });
    console.log(`admin API on ${admin.url}`);
    await untilSignal();
    await admin.stop();
    for (const c of running) await c.stop();
  },
});
