// The security modes' isolation matrix on the netns fabric: more "pods" behind a side's node (each
// its own network namespace carrying the IP the cluster gave a real pod), the objects that make a
// pod offloaded, a peer's twin, or a reflected Service's endpoint, and a probe that tells an
// answer from a refusal and from a timeout (bounded: never a hang).
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { CommandError } from "../../netfabric/os/errors.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import type { FabricSide } from "./fabric-rig.ts";
import { runner, type Lab } from "./lab.ts";
import { waitFor } from "../support/wait.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");

type PodObject = KubeObject & { status?: { podIP?: string }; spec?: { nodeName?: string } };

/** A pod the cluster schedules on its (kwok) node, in `namespace` with `labels`: its IP, once it has one. */
export async function scheduledPod(
  client: KubeClient,
  name: string,
  namespace: string,
  labels: Record<string, string> = {},
): Promise<string> {
  await client.create(Resources.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels },
    spec: { containers: [{ name: "echo", image: "echo:fake" }] },
  });
  return waitFor(
    `pod ${namespace}/${name} to get an IP`,
    async () => (await client.get<PodObject>(Resources.pods, name, namespace)).status?.podIP,
    { timeoutMs: 180_000 },
  );
}

/** One more "pod" namespace behind the side's node (as buildSide's), at `ip`. `tag` is one character. */
export async function addPodNamespace(lab: Lab, s: FabricSide, tag: string, ip: string): Promise<string> {
  const ns = await lab.netns(`p${s.name.slice(0, 1)}${tag}`);
  const dev = `pod${tag}`;
  await lab.sh(s.node, ["ip", "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", ns]);
  await createIp(runner, ns).batch([
    `addr add ${ip}/32 dev eth0`,
    "link set eth0 mtu 1380 up",
    "route add 169.254.1.1 dev eth0",
    "route add default via 169.254.1.1",
  ]);
  await createIp(runner, s.node).batch([
    `addr add 169.254.1.1/32 dev ${dev}`,
    `link set ${dev} up`,
    `route add ${ip}/32 dev ${dev}`,
  ]);
  return ns;
}

/**
 * A local pod offloaded to `peerId`: bound to a virtual node standing for that peer, running at
 * `seenAt` (the address we see its remote twin at, as the virtual kubelet writes it). Nothing
 * manages the node (kwok only takes annotated ones), so the status written here stays.
 */
export async function offloadedPod(client: KubeClient, peerId: string, name: string, seenAt: string) {
  const node = `liqo-${peerId.slice(0, 20)}`;
  if (!(await client.find(Resources.nodes, node)))
    await client.create(Resources.nodes, {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: node, labels: { "liqo.io/type": "virtual-node", "liqo.io/remote-cluster-id": peerId } },
      // The virtual node's taint: the scheduler puts nothing else here.
      spec: { taints: [{ key: "virtual-node.liqo.io/not-allowed", value: "true", effect: "NoExecute" }] },
    });
  await client.create(Resources.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName: node,
      // No kubelet ever reports on this node: the pod must outlive the unreachable taint.
      tolerations: [{ operator: "Exists" }],
      containers: [{ name: "app", image: "app:fake" }],
    },
  });
  await client.mergePatch(
    Resources.pods,
    name,
    "default",
    { status: { phase: "Running", podIP: seenAt, podIPs: [{ ip: seenAt }] } },
    "status",
  );
}

export type Outcome = "answered" | "refused" | "timeout";

/** One TCP connection from `ns` to `target:port` with a bounded wait: what happened, and what the server saw. */
export async function probe(
  lab: Lab,
  ns: string,
  target: string,
  port = 7000,
  timeoutMs = 4000,
): Promise<{ outcome: Outcome; seen?: string; error?: string }> {
  try {
    const seen = (await lab.sh(ns, [process.execPath, connectScript, target, String(port), String(timeoutMs)])).trim();
    return seen ? { outcome: "answered", seen } : { outcome: "refused", error: "connection closed without data" };
  } catch (err) {
    const stderr = err instanceof CommandError ? err.stderr.trim() : String(err);
    return { outcome: /^timeout connecting/m.test(stderr) ? "timeout" : "refused", error: stderr };
  }
}
