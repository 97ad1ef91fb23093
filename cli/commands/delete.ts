// liqoctl delete virtualnode NAME: deletes a VirtualNode, found in any namespace unless --namespace
// or --remote-cluster-name narrows it; the controller manager drains it (the Node is cordoned, its
// pods deleted so their controllers reschedule them, then the Node goes and the finalizer with it).
// With --wait (the default) it shows the drain until the VirtualNode is gone.
import { defineCommand } from "citty";
import { VirtualNodeResource } from "../../core/apis/index.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { objectKey } from "../../core/kube/resources.ts";
import { kubeFlags, timeoutMs } from "../peering.ts";
import { info } from "../ui.ts";
import {
  checkNamespaceName,
  checkVirtualNodeName,
  listForeignClusters,
  listVirtualNodes,
  pickPeering,
  pickVirtualNode,
  waitDrained,
} from "../virtualnode.ts";

const deleteVirtualNode = defineCommand({
  meta: {
    name: "virtualnode",
    alias: "vn",
    description:
      "Delete a virtual node made by liqoctl create virtualnode: its pods are rescheduled, then the node goes",
  },
  args: {
    name: { type: "positional", required: true, description: "the virtual node's name" },
    "remote-cluster-name": {
      type: "string",
      description: "only the virtual nodes of the peering with this ForeignCluster",
    },
    namespace: {
      type: "string",
      alias: "n",
      description: "the VirtualNode's namespace (default: search every namespace)",
    },
    wait: {
      type: "boolean",
      default: true,
      description: "wait until the node is drained and the VirtualNode gone (--wait=false to return at once)",
    },
    timeout: { type: "string", default: "2m", description: "how long to wait for the drain (e.g. 90s, 5m)" },
    ...kubeFlags,
  },
  async run({ args }) {
    checkVirtualNodeName(args.name);
    if (args.namespace !== undefined) checkNamespaceName(args.namespace);
    const timeout = timeoutMs(args.timeout);
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const fcs = await listForeignClusters(client);
    const peering = args["remote-cluster-name"];
    const clusterID = peering ? pickPeering(fcs, { name: peering }).spec.clusterIdentity?.clusterID : undefined;
    const vn = pickVirtualNode(await listVirtualNodes(client, args.namespace), args.name, fcs, {
      namespace: args.namespace,
      clusterID,
      peering,
    });
    const key = objectKey(vn);
    if (vn.metadata.deletionTimestamp) info(`VirtualNode ${key} is already being deleted`);
    else {
      await client.delete(VirtualNodeResource, vn.metadata.name!, vn.metadata.namespace, { uid: vn.metadata.uid });
      info(`VirtualNode ${key} deleted; the controller manager drains node ${vn.metadata.name}`);
    }
    if (!args.wait) return;
    await waitDrained(client, vn, { timeoutMs: timeout, liqoNamespace: args["liqo-namespace"] });
  },
});

export default defineCommand({
  meta: { name: "delete", description: "Delete liqo resources" },
  subCommands: { virtualnode: deleteVirtualNode },
});
