// The rig's load balancer, standing in for a cloud's (or MetalLB in layer 3 mode): for every
// Service of type LoadBalancer with loadBalancerClass RIG_LB_CLASS in one cluster, an address from
// the rig's own /24 (.200 and up) written to status.loadBalancer.ingress, and a host route for it
// via one of the cluster's real nodes. kube-proxy on that node matches the address and sends the
// traffic to the Service's endpoints, as it does behind any load balancer that keeps the
// destination. Only Services asking for the class are served, so liqo's own LoadBalancer Services
// (the auth service, the gateway) keep the rig's behaviour without one.
import type { KubeClient } from "../../core/kube/client.ts";
import { keyOf, Resources } from "../../core/kube/resources.ts";
import type { Service } from "../../core/kube/types.ts";
import type { Rig } from "./rig.ts";

export const RIG_LB_CLASS = "rig.liqo-bun.io/host-route";
/** The first address handed out in the rig's /24, and how many there are. */
const FIRST = 200;
const COUNT = 50;

export interface RigLoadBalancer {
  /** The address given to a Service (namespace/name), once it has one. */
  addressOf(key: string): string | undefined;
  /** Stops serving and removes the host routes; the Services keep their status. */
  stop(): Promise<void>;
}

function ip(args: string[]): { ok: boolean; err: string } {
  const r = Bun.spawnSync(["ip", ...args], { stdout: "ignore", stderr: "pipe" });
  return { ok: r.exitCode === 0, err: r.stderr.toString().trim() };
}

/** The next free address of the pool, skipping what is taken; undefined when all are. */
export function nextAddress(prefix: string, taken: Set<string>): string | undefined {
  for (let i = FIRST; i < FIRST + COUNT; i++) {
    const a = `${prefix}.${i}`;
    if (!taken.has(a)) return a;
  }
  return undefined;
}

export function startRigLoadBalancer(
  rig: Rig,
  cluster: string,
  client: KubeClient,
  o: { intervalMs?: number; log?: (m: string) => void } = {},
): RigLoadBalancer {
  const net = rig.network;
  const c = rig.clusters.find((x) => x.name === cluster);
  const node = c?.realNodeStates?.[0];
  if (!net || !node) throw new Error(`the rig's load balancer needs real nodes in cluster ${cluster}`);
  const given = new Map<string, string>();
  let stopped = false;

  async function pass(): Promise<void> {
    const services = await client.list<Service>(Resources.services);
    const wanted = services.items.filter(
      (s) =>
        s.spec?.type === "LoadBalancer" &&
        (s.spec as { loadBalancerClass?: string }).loadBalancerClass === RIG_LB_CLASS,
    );
    const live = new Set(wanted.map((s) => keyOf(s.metadata.namespace, s.metadata.name ?? "")));
    for (const [key, address] of given) {
      if (live.has(key)) continue;
      ip(["route", "del", `${address}/32`, "via", node!.ip]);
      given.delete(key);
      o.log?.(`released ${address} (${key} is gone or no longer asks for ${RIG_LB_CLASS})`);
    }
    for (const s of wanted) {
      const key = keyOf(s.metadata.namespace, s.metadata.name ?? "");
      let address = given.get(key);
      if (!address) {
        address = nextAddress(net!.prefix, new Set(given.values()));
        if (!address) {
          o.log?.(`no address left for ${key} (${COUNT} in the pool)`);
          continue;
        }
        const r = ip(["route", "replace", `${address}/32`, "via", node!.ip, "dev", net!.bridge]);
        if (!r.ok) throw new Error(`routing ${address} via ${node!.name} (${node!.ip}): ${r.err}`);
        given.set(key, address);
        o.log?.(`${key}: ${address} via ${node!.name}`);
      }
      const ingress = (s.status as { loadBalancer?: { ingress?: { ip?: string }[] } } | undefined)?.loadBalancer
        ?.ingress;
      if (ingress?.length === 1 && ingress[0]!.ip === address) continue;
      await client.mergePatch(
        Resources.services,
        s.metadata.name ?? "",
        s.metadata.namespace,
        { status: { loadBalancer: { ingress: [{ ip: address, ipMode: "VIP" }] } } },
        "status",
      );
    }
  }

  const loop = (async () => {
    while (!stopped) {
      try {
        await pass();
      } catch (err) {
        o.log?.(`load balancer pass failed (retried): ${(err as Error).message}`);
      }
      await Bun.sleep(o.intervalMs ?? 500); // polling the Services, as a cloud controller's resync would
    }
  })();

  return {
    addressOf: (key) => given.get(key),
    async stop() {
      stopped = true;
      await loop;
      for (const address of given.values()) ip(["route", "del", `${address}/32`, "via", node.ip]);
      given.clear();
    },
  };
}
