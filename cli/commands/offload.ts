// liqoctl offload namespace <ns>: creates the NamespaceOffloading named "offloading" and waits
// for the outcome, as Liqo's liqoctl does.
import { defineCommand } from "citty";
import { DEFAULT_NAMESPACE_OFFLOADING_NAME, NamespaceOffloadingResource } from "../../core/apis/index.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { CliError, ExitCode } from "../errors.ts";
import { selectorTerms } from "../selector.ts";
import { info, parseDuration, repeatedFlag, spinner } from "../ui.ts";

const MAPPING = ["DefaultName", "EnforceSameName"];
const PODS = ["LocalAndRemote", "Local", "Remote"];

type Offloading = KubeObject & {
  status?: {
    offloadingPhase?: string;
    remoteNamespaceName?: string;
    remoteNamespacesConditions?: Record<string, { type: string; status: string; reason?: string; message?: string }[]>;
  };
};

export function namespaceOffloading(namespace: string, mapping: string, pods: string, selectors: string[]): KubeObject {
  return {
    apiVersion: "offloading.liqo.io/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name: DEFAULT_NAMESPACE_OFFLOADING_NAME, namespace },
    spec: {
      namespaceMappingStrategy: mapping,
      podOffloadingStrategy: pods,
      clusterSelector: { nodeSelectorTerms: selectorTerms(selectors) },
    },
  };
}

const kube = {
  kubeconfig: { type: "string", description: "path to the kubeconfig (default: KUBECONFIG, ~/.kube/config)" },
  context: { type: "string", description: "kubeconfig context to use" },
} as const;

const offloadNamespace = defineCommand({
  meta: {
    name: "namespace",
    alias: "ns",
    description: "Offload a namespace to the peered clusters selected by the cluster selector",
  },
  args: {
    name: { type: "positional", required: true, description: "the namespace to offload" },
    "namespace-mapping-strategy": {
      type: "string",
      default: "DefaultName",
      description: "DefaultName (<ns>-<cluster>-<id>) or EnforceSameName",
    },
    "pod-offloading-strategy": {
      type: "string",
      default: "LocalAndRemote",
      description: "LocalAndRemote, Local or Remote",
    },
    selector: {
      alias: "l",
      type: "string",
      description: "cluster selector on virtual node labels, e.g. 'region in (europe,us-west), !staging'; repeat to OR",
    },
    output: {
      type: "string",
      alias: "o",
      description: "yaml or json: print the NamespaceOffloading instead of creating it",
    },
    timeout: { type: "string", default: "120s", description: "how long to wait for the offloading to be ready" },
    ...kube,
  },
  async run({ args, rawArgs }) {
    const mapping = args["namespace-mapping-strategy"];
    const pods = args["pod-offloading-strategy"];
    if (!MAPPING.includes(mapping))
      throw new CliError(`--namespace-mapping-strategy ${mapping}: use one of ${MAPPING.join(", ")}`);
    if (!PODS.includes(pods)) throw new CliError(`--pod-offloading-strategy ${pods}: use one of ${PODS.join(", ")}`);
    let timeoutMs: number;
    try {
      timeoutMs = parseDuration(args.timeout, "timeout");
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const obj = namespaceOffloading(args.name, mapping, pods, repeatedFlag(rawArgs, "selector"));
    if (args.output) {
      if (args.output === "json") console.log(JSON.stringify(obj, null, 2));
      else if (args.output === "yaml") console.log(Bun.YAML.stringify(obj, null, 2));
      else throw new CliError(`--output ${args.output}: use yaml or json`);
      return;
    }
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    if (!(await client.find(Resources.namespaces, args.name))) {
      throw new CliError(
        `namespace ${args.name} does not exist; create it first (kubectl create namespace ${args.name})`,
        ExitCode.Failure,
      );
    }
    const existing = await client.find<KubeObject & { spec?: Record<string, unknown> }>(
      NamespaceOffloadingResource,
      DEFAULT_NAMESPACE_OFFLOADING_NAME,
      args.name,
    );
    if (existing && existing.spec?.namespaceMappingStrategy !== mapping) {
      throw new CliError(
        `namespace ${args.name} is already offloaded with --namespace-mapping-strategy ${existing.spec?.namespaceMappingStrategy}, which cannot change; run liqoctl unoffload namespace ${args.name} first`,
        ExitCode.Failure,
      );
    }
    await client.apply(NamespaceOffloadingResource, obj, { fieldManager: "liqoctl", force: true });
    info(`NamespaceOffloading ${args.name}/${DEFAULT_NAMESPACE_OFFLOADING_NAME} ${existing ? "updated" : "created"}`);
    const spin = spinner(`Waiting for the offloading of namespace ${args.name} to complete`);
    const deadline = Date.now() + timeoutMs;
    let last: Offloading | undefined;
    while (Date.now() < deadline) {
      last = await client.find<Offloading>(NamespaceOffloadingResource, DEFAULT_NAMESPACE_OFFLOADING_NAME, args.name);
      const phase = last?.status?.offloadingPhase;
      if (phase) spin.update(`Waiting for the offloading of namespace ${args.name} to complete (phase ${phase})`);
      if (phase === "Ready") {
        spin.succeed(
          `Offloading of namespace ${args.name} correctly enabled (remote namespace ${last!.status!.remoteNamespaceName})`,
        );
        return;
      }
      if (phase === "NoClusterSelected") {
        spin.fail(
          `No cluster matches the selector of namespace ${args.name}: check the labels of the virtual nodes (kubectl get nodes -l liqo.io/type=virtual-node --show-labels)`,
        );
        process.exitCode = ExitCode.Failure;
        return;
      }
      if (phase === "AllFailed" || phase === "SomeFailed") break;
      await Bun.sleep(500);
    }
    const failures = Object.entries(last?.status?.remoteNamespacesConditions ?? {}).flatMap(([cluster, conds]) =>
      conds
        .filter((c) => c.type === "Ready" && c.status !== "True")
        .map((c) => `${cluster}: ${c.reason ?? ""} ${c.message ?? ""}`.trim()),
    );
    spin.fail(
      `Offloading of namespace ${args.name} is ${last?.status?.offloadingPhase ?? "not processed (is the liqo controller-manager running?)"}${failures.length ? `: ${failures.join("; ")}` : ""}`,
    );
    process.exitCode = ExitCode.Failure;
  },
});

export default defineCommand({
  meta: { name: "offload", description: "Offload resources to peered clusters" },
  subCommands: { namespace: offloadNamespace },
});
