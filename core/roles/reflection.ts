// `liqo reflection`: the reflection engine as a process, for one peering. Until the virtual
// kubelet and the offloading controller drive it, namespace pairs come from a file that is
// re-read when it changes. Serves the admin API: readiness (caches synced), metrics, and views.
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import * as v from "valibot";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry } from "../metrics/index.ts";
import { createReflectionEngine } from "../reflection/engine/engine.ts";
import { watchPluginDir } from "../reflection/engine/dropins.ts";
import type { NamespacePair } from "../reflection/engine/reflector.ts";
import { builtinWasm, isBuiltinName, type BuiltinName } from "../../reflectors/index.ts";
import { CliError } from "../cli-errors.ts";
import { adminArgs, adminSecurity, serveAdmin, watchConfigFile } from "./shared.ts";

const DEFAULT_BUILTINS = "configmaps,secrets,services,endpointslices,ingresses";

const PairsFile = v.object({
  pairs: v.array(
    v.object({
      localNamespace: v.pipe(
        v.string(),
        v.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "localNamespace must be a namespace name"),
      ),
      remoteNamespace: v.pipe(
        v.string(),
        v.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "remoteNamespace must be a namespace name"),
      ),
    }),
  ),
});

export function readPairsFile(path: string): NamespacePair[] {
  let raw: unknown;
  try {
    raw = Bun.YAML.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new CliError(`pairs file ${path} cannot be read as YAML: ${(err as Error).message}`);
  }
  const parsed = v.safeParse(PairsFile, raw ?? { pairs: [] });
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const at = issue.path?.map((p) => p.key).join(".") ?? "";
    throw new CliError(
      `pairs file ${path}: ${at ? at + ": " : ""}${issue.message}; expected pairs: [{localNamespace, remoteNamespace}]`,
    );
  }
  return parsed.output.pairs;
}

export default defineCommand({
  meta: {
    name: "reflection",
    description:
      "Reflect resources of paired namespaces from this cluster to a remote one, through WASM reflector plugins",
  },
  args: {
    kubeconfig: {
      type: "string",
      description: "kubeconfig of the local cluster (default: KUBECONFIG, ~/.kube/config)",
    },
    context: { type: "string", description: "context in the local kubeconfig" },
    "remote-kubeconfig": { type: "string", required: true, description: "kubeconfig of the remote cluster" },
    "remote-context": { type: "string", description: "context in the remote kubeconfig" },
    "local-cluster-id": {
      type: "string",
      required: true,
      description: "this cluster's ID (origin label of reflected objects)",
    },
    "remote-cluster-id": { type: "string", required: true, description: "the remote cluster's ID" },
    "pairs-file": {
      type: "string",
      required: true,
      description: "YAML file: pairs: [{localNamespace, remoteNamespace}], re-read on change",
    },
    builtins: {
      type: "string",
      default: DEFAULT_BUILTINS,
      description: "built-in reflectors to run (comma-separated)",
    },
    "plugin-dir": { type: "string", description: "directory of drop-in .wasm plugins, watched for changes" },
    workers: { type: "string", default: "4", description: "workers per reflector" },
    ...adminArgs("127.0.0.1:8090"),
  },
  async run({ args }) {
    const log = createLogger({ role: "reflection" });
    const builtins = args.builtins
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = builtins.filter((b) => !isBuiltinName(b));
    if (unknown.length)
      throw new CliError(
        `unknown built-in reflector(s): ${unknown.join(", ")}; choose from configmaps, secrets, services, endpointslices, ingresses, storage, pods`,
      );
    const workers = Number(args.workers);
    if (!Number.isInteger(workers) || workers < 1 || workers > 64)
      throw new CliError(`--workers must be 1..64, got ${args.workers}`);
    adminSecurity(args); // bad admin flags fail before anything starts
    if (!existsSync(args["pairs-file"])) throw new CliError(`pairs file ${args["pairs-file"]} does not exist`);
    const initialPairs = readPairsFile(args["pairs-file"]);

    const local = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const remote = createKubeClient({ kubeconfig: args["remote-kubeconfig"], context: args["remote-context"] });
    const registry = createRegistry();
    const engine = createReflectionEngine({
      local,
      remote,
      registry,
      logger: log,
      workers,
      localClusterId: args["local-cluster-id"],
      remoteClusterId: args["remote-cluster-id"],
    });
    for (const b of builtins)
      await engine.addPlugin(await builtinWasm(b as BuiltinName), { trust: "builtin", source: `builtin:${b}` });
    const dropins = args["plugin-dir"] ? watchPluginDir(engine, args["plugin-dir"], { logger: log }) : undefined;

    let pairsError: string | undefined;
    async function syncPairs(pairs: NamespacePair[]) {
      const wanted = new Map(pairs.map((p) => [p.localNamespace, p]));
      for (const p of engine.pairs()) {
        if (wanted.get(p.localNamespace)?.remoteNamespace !== p.remoteNamespace)
          await engine.removeNamespacePair(p.localNamespace);
      }
      for (const p of pairs) await engine.addNamespacePair(p);
    }
    await syncPairs(initialPairs);
    watchConfigFile(args["pairs-file"], () => {
      try {
        const pairs = readPairsFile(args["pairs-file"]);
        pairsError = undefined;
        void syncPairs(pairs).catch((err) => log.error("applying the pairs file failed", { err }));
      } catch (err) {
        pairsError = (err as Error).message;
        log.error("pairs file rejected; keeping the previous pairs", { err });
      }
    });

    const server = await serveAdmin({
      args,
      registry,
      logger: log,
      client: local,
      title: `liqo reflection: ${args["local-cluster-id"]} → ${args["remote-cluster-id"]}`,
      checks: {
        "caches-synced": () => engine.synced() || { ok: false, reason: "reflector caches are still listing" },
        "pairs-file": () => (pairsError ? { ok: false, reason: pairsError } : true),
      },
      extensions: [
        (await import("./admin-views.ts")).adminViews({
          registry,
          clients: { local, remote },
          reflection: { engine, dropins, pluginDir: args["plugin-dir"] },
        }),
      ],
    });
    log.info("reflection running", { admin: server.url, pairs: initialPairs.length, builtins });
    console.log(`admin API on ${server.url}`);

    await new Promise<void>((resolve) => {
      for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => resolve());
    });
    log.info("stopping");
    dropins?.stop();
    await server.stop();
    await engine.stop();
  },
});
