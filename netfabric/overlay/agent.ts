// The route agent (`liqo route`, one per node): publishes the node's VTEP address on its Node and
// keeps the node's VXLAN interface and the routes of the remote (remapped) networks towards the
// gateway equal to what the TunnelEndpoints and the gateway Service say. Level-triggered: every
// pass reads the interface and changes only what differs, on events and on a timer (hand-made
// damage is repaired within one interval).
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { silentLogger, type Logger } from "../../core/log.ts";
import type { Registry } from "../../core/metrics/index.ts";
import { GATEWAY_SERVICE_NAME, CLUSTER_ID_LABEL } from "../shared/labels.ts";
import type { IpAdapter } from "../os/ip.ts";
import { GATEWAY_VTEP_ANNOTATION, NODE_VTEP_ANNOTATION, nodeVxlan, type OverlayEnd } from "./plan.ts";
import { reconcileVxlan, type VxlanSpec } from "./vxlan.ts";
import { createLoop } from "../shared/loop.ts";

export interface RouteAgentOptions {
  client: KubeClient;
  nodeName: string;
  liqoNamespace: string;
  ip: IpAdapter;
  end: OverlayEnd;
  intervalMs?: number;
  logger?: Logger;
  registry?: Registry;
}

export interface RouteAgentState {
  node: string;
  gatewayVtep?: string;
  spec?: VxlanSpec;
  lastChanges: string[];
  lastError?: string;
  passes: number;
  repairs: number;
}

export function createRouteAgent(o: RouteAgentOptions) {
  const log = (o.logger ?? silentLogger).child({ component: "route-agent", node: o.nodeName });
  const teps = createInformer<TunnelEndpoint>({
    client: o.client,
    resource: TunnelEndpointResource,
    labelSelector: CLUSTER_ID_LABEL,
    logger: log,
  });
  const services = createInformer({
    client: o.client,
    resource: Resources.services,
    namespace: o.liqoNamespace,
    fieldSelector: `metadata.name=${GATEWAY_SERVICE_NAME}`,
    logger: log,
  });
  const state: RouteAgentState = { node: o.nodeName, lastChanges: [], passes: 0, repairs: 0 };
  const changesTotal = o.registry?.counter({
    name: "liqo_route_changes_total",
    help: "Overlay changes applied (creation and drift repair).",
  });
  let announced = false;

  async function announce() {
    // Our VTEP address on our Node, for the gateway's side of the overlay.
    const node = await o.client.get<KubeObject>(Resources.nodes, o.nodeName);
    if (node.metadata.annotations?.[NODE_VTEP_ANNOTATION] !== o.end.vtepIp) {
      await o.client.mergePatch(Resources.nodes, o.nodeName, undefined, {
        metadata: { annotations: { [NODE_VTEP_ANNOTATION]: o.end.vtepIp } },
      });
    }
    announced = true;
  }

  const loop = createLoop({
    name: "route",
    intervalMs: o.intervalMs ?? 5_000,
    logger: log,
    async pass() {
      if (!announced) await announce();
      const svc = services.list()[0];
      state.gatewayVtep = svc?.metadata.annotations?.[GATEWAY_VTEP_ANNOTATION];
      const spec = nodeVxlan(o.end, state.gatewayVtep, teps.list());
      state.spec = spec;
      const changes = await reconcileVxlan(o.ip, spec);
      state.passes++;
      if (changes.length > 0) {
        state.repairs++;
        changesTotal?.inc(changes.length);
        log.info("overlay reconciled", { changes });
      }
      state.lastChanges = changes.length > 0 ? changes : state.lastChanges;
      state.lastError = undefined;
    },
    onError(err) {
      state.lastError = err.message;
    },
  });
  for (const i of [teps, services]) i.on({ add: loop.kick, update: loop.kick, delete: loop.kick });

  return {
    state: () => ({ ...state }),
    synced: () => teps.synced && services.synced,
    async start() {
      teps.start();
      services.start();
      await Promise.all([teps.waitForSync(120_000), services.waitForSync(120_000)]);
      loop.start();
    },
    async stop() {
      await loop.stop();
      await Promise.all([teps.stop(), services.stop()]);
    },
    /** Runs one pass now and resolves when it is done (tests, and the admin "reconcile" action). */
    reconcileNow: () => loop.runNow(),
  };
}
export type RouteAgent = ReturnType<typeof createRouteAgent>;
