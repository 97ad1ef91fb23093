// liqoctl create virtualnode NAME --remote-cluster-name X: one more virtual node for an established
// outgoing peering (Liqo 1.x), with its share of the provider's offer; every flag is checked before
// the cluster is contacted, and the peering and the name before anything is written. With --wait
// (the default) it follows the controller manager's Ready condition (docs/virtual-nodes.md).
import { defineCommand } from "citty";
import { ForeignClusterResource, VirtualNodeResource } from "../../core/apis/index.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources } from "../../core/kube/resources.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { clusterIdProblem } from "../../core/peering/identity.ts";
import { CliError, ExitCode } from "../errors.ts";
import { kubeFlags, timeoutMs } from "../peering.ts";
import { info } from "../ui.ts";
import {
  checkNamespaceName,
  checkVirtualNodeName,
  clusterNameOf,
  listForeignClusters,
  listVirtualNodes,
  outgoingProblem,
  parseLabelPairs,
  parseResources,
  parseTaints,
  peeringNodeName,
  pickPeering,
  virtualNodeManifest,
  waitReady,
  type VirtualNodeObject,
} from "../virtualnode.ts";

const existsError = (name: string, namespace: string) =>
  new CliError(
    `VirtualNode ${namespace}/${name} exists already; delete it first (liqoctl delete virtualnode ${name} --namespace ${namespace}) or pick another name`,
    ExitCode.Failure,
  );

const createVirtualNode = defineCommand({
  meta: {
    name: "virtualnode",
    alias: "vn",
    description:
      "Create one more virtual node for an outgoing peering, with its share of the provider's offer (the peering's own node keeps the rest)",
  },
  args: {
    name: { type: "positional", required: true, description: "the virtual node's name (also the Node's)" },
    "remote-cluster-name": {
      type: "string",
      description: "the provider: the ForeignCluster's name (or pass --remote-cluster-id)",
    },
    "remote-cluster-id": {
      type: "string",
      description: "the provider's cluster ID (instead of --remote-cluster-name)",
    },
    cpu: { type: "string", description: "the node's share of the offer's cpu, e.g. 2 or 1500m" },
    memory: { type: "string", description: "the node's share of the offer's memory, e.g. 4Gi" },
    pods: { type: "string", description: "how many pods the node takes, e.g. 20" },
    resource: {
      type: "string",
      description: "other resources of the offer, name=quantity,... e.g. nvidia.com/gpu=1,ephemeral-storage=10Gi",
    },
    labels: { type: "string", description: "labels of the node, k=v,... e.g. accelerator=gpu" },
    taints: {
      type: "string",
      description: "taints of the node, key=value:Effect or key:Effect,... (NoSchedule, PreferNoSchedule, NoExecute)",
    },
    "remote-node-selector": {
      alias: "node-selector",
      type: "string",
      description: "k=v,...: the provider's nodes its pods run on (added to their nodeSelector there)",
    },
    namespace: {
      type: "string",
      alias: "n",
      description: "where to create the VirtualNode (default: the peering's tenant namespace)",
    },
    wait: {
      type: "boolean",
      default: true,
      description: "wait until the node is Ready, or refused (--wait=false to return at once)",
    },
    timeout: { type: "string", default: "2m", description: "how long to wait for the node to be ready (e.g. 90s, 5m)" },
    ...kubeFlags,
  },
  async run({ args }) {
    // Everything the flags say is checked before the cluster is contacted.
    const name = args.name;
    checkVirtualNodeName(name);
    const byName = args["remote-cluster-name"];
    const byId = args["remote-cluster-id"];
    if (!byName && !byId)
      throw new CliError(
        "pass the provider: --remote-cluster-name <ForeignCluster> or --remote-cluster-id <ID> (liqoctl status lists the peerings)",
      );
    if (byName && byId) throw new CliError("pass either --remote-cluster-name or --remote-cluster-id, not both");
    if (byId) {
      const problem = clusterIdProblem(byId);
      if (problem) throw new CliError(`--remote-cluster-id: ${problem}`);
    }
    if (byName && name === `liqo-${byName}`)
      throw new CliError(
        `virtual node name ${name} is the name of the peering's own node (liqo-${byName}); pick another name`,
      );
    if (args.namespace !== undefined) checkNamespaceName(args.namespace);
    const resources = parseResources(args);
    const labels = parseLabelPairs(args.labels, "labels");
    const taints = parseTaints(args.taints);
    const nodeSelector = parseLabelPairs(args["remote-node-selector"], "remote-node-selector");
    const timeout = timeoutMs(args.timeout);

    // Then the cluster: the peering, the namespace and the name, before anything is written.
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const fcs = await listForeignClusters(client);
    const fc = pickPeering(fcs, { name: byName, id: byId });
    const problem = outgoingProblem(fc);
    if (problem) throw new CliError(problem, ExitCode.Failure);
    const clusterID = fc.spec.clusterIdentity!.clusterID;
    const namespace = args.namespace ?? fc.status?.tenantNamespace?.local;
    if (!namespace)
      throw new CliError(
        `ForeignCluster ${fc.metadata.name} has no local tenant namespace yet (status.tenantNamespace.local); wait for the peering (liqoctl status) or pass --namespace`,
        ExitCode.Failure,
      );
    if (!(await client.find(Resources.namespaces, namespace)))
      throw new CliError(
        `namespace ${namespace} does not exist${args.namespace ? "; create it first or leave --namespace out (the peering's tenant namespace)" : ` (the tenant namespace of the peering with ${fc.metadata.name}); is the peering still being set up? liqoctl status`}`,
        ExitCode.Failure,
      );
    const owner = fcs.find((f) => peeringNodeName(f) === name);
    if (owner)
      throw new CliError(
        `virtual node name ${name} is the name of the own node of the peering with ${clusterNameOf(owner)}; pick another name`,
      );
    const same = (await listVirtualNodes(client)).find((vn) => vn.metadata.name === name);
    if (same) throw existsError(name, same.metadata.namespace!);
    if (await client.find(Resources.nodes, name))
      throw new CliError(
        `a Node named ${name} exists already (kubectl get node ${name}); pick another name`,
        ExitCode.Failure,
      );

    let created: VirtualNodeObject;
    try {
      created = await client.create<VirtualNodeObject>(
        VirtualNodeResource,
        virtualNodeManifest({ name, namespace, clusterID, resources, labels, taints, nodeSelector }),
      );
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) throw existsError(name, namespace);
      throw err;
    }
    info(`VirtualNode ${namespace}/${name} created for the peering with ${fc.metadata.name}`);
    if (!args.wait) {
      info(`the controller manager makes node ${name}; liqoctl status shows when it is Ready`);
      return;
    }
    await waitReady(client, created, {
      timeoutMs: timeout,
      liqoNamespace: args["liqo-namespace"],
      peeringProblem: async () => {
        const now = await client.find<ForeignClusterObject>(ForeignClusterResource, fc.metadata.name!);
        return now ? outgoingProblem(now) : `ForeignCluster ${fc.metadata.name} is gone`;
      },
    });
  },
});

export default defineCommand({
  meta: { name: "create", description: "Create liqo resources" },
  subCommands: { virtualnode: createVirtualNode },
});
