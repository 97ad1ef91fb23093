// `liqo webhook`: the pod mutating webhook (pod offloading strategy → scheduling constraints).
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { CliError } from "../cli-errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { registerPodWebhook, startPodWebhook } from "../webhook/server.ts";
import { adminArgs, adminSecurity, serveAdmin } from "./shared.ts";

export default defineCommand({
  meta: { name: "webhook", description: "Serve the pod mutating webhook that applies pod offloading strategies" },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "context in the kubeconfig" },
    "tls-cert-file": { type: "string", required: true, description: "serving certificate (PEM)" },
    "tls-key-file": { type: "string", required: true, description: "serving key (PEM)" },
    "ca-file": {
      type: "string",
      description: "CA that signed the serving certificate; with it, the webhook registers itself",
    },
    address: { type: "string", default: "0.0.0.0:9443", description: "host:port to serve on" },
    "register-url": {
      type: "string",
      description: "URL the API server calls (out-of-cluster runs); default: the Service",
    },
    "service-namespace": {
      type: "string",
      default: "liqo",
      description: "namespace of the webhook Service (in-cluster registration)",
    },
    "service-name": { type: "string", default: "liqo-webhook", description: "name of the webhook Service" },
    "failure-policy": {
      type: "string",
      default: "Fail",
      description: "Fail (default: pods wait for the webhook) or Ignore",
    },
    ...adminArgs("127.0.0.1:8083"),
  },
  async run({ args }) {
    adminSecurity(args); // bad admin flags fail before anything starts
    for (const f of [args["tls-cert-file"], args["tls-key-file"], args["ca-file"]].filter(Boolean) as string[]) {
      if (!existsSync(f)) throw new CliError(`${f} does not exist`);
    }
    if (!["Fail", "Ignore"].includes(args["failure-policy"]))
      throw new CliError(`--failure-policy must be Fail or Ignore, got ${args["failure-policy"]}`);
    const [host, port] = args.address.split(/:(?=\d+$)/);
    if (!host || port === undefined) throw new CliError(`--address must be host:port, got ${args.address}`);
    const log = createLogger({ role: "webhook" });
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const registry = createRegistry();
    registerProcessMetrics(registry);
    const webhook = await startPodWebhook({
      client,
      tls: { cert: args["tls-cert-file"], key: args["tls-key-file"] },
      host,
      port: Number(port),
      logger: log,
      registry,
    });
    if (args["ca-file"]) {
      const caBundle = readFileSync(args["ca-file"]).toString("base64");
      await registerPodWebhook(
        client,
        args["register-url"]
          ? { url: args["register-url"], caBundle }
          : { service: { namespace: args["service-namespace"], name: args["service-name"], port: 443 }, caBundle },
        args["failure-policy"] as "Fail" | "Ignore",
      );
    }
    const admin = await serveAdmin({
      args,
      registry,
      logger: log,
      client,
      title: "liqo webhook",
      views: { webhook: () => ({ url: webhook.url }) },
      // startPodWebhook returns once its NamespaceOffloading cache has synced; what can still fail is the HTTPS listener itself.
      checks: {
        serving: async ({ signal }) =>
          (await fetch(`${webhook.url}/healthz`, { signal, tls: { rejectUnauthorized: false } })).ok || {
            ok: false,
            reason: "the webhook does not answer on its own address",
          },
      },
    });
    log.info("webhook serving", { url: webhook.url, admin: admin.url });
    console.log(`webhook on ${webhook.url}`);
    await new Promise<void>((resolve) => {
      for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => resolve());
    });
    await admin.stop();
    await webhook.stop();
  },
});
