// `liqo route`: one per node (a DaemonSet in the chart). Keeps the node's VXLAN interface towards
// the gateway and the routes of the remote (remapped) networks through it, from the
// TunnelEndpoints and the gateway Service, repairing drift every --resync-period.
// Admin view: overlay (the spec, the gateway VTEP, the last changes).
import { defineCommand } from "citty";
import { CliError } from "../cli-errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { parseIpv4 } from "../../netfabric/ipam/index.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createCommandRunner } from "../../netfabric/os/run.ts";
import { createRouteAgent, type RouteAgent } from "../../netfabric/overlay/agent.ts";
import { detectVtepDevice } from "../../netfabric/overlay/device.ts";
import { adminArgs, adminSecurity, serveAdmin, untilSignal } from "./shared.ts";

export default defineCommand({
  meta: { name: "route", description: "VXLAN overlay and routes towards the gateway, on one node" },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "context in the kubeconfig" },
    "liqo-namespace": { type: "string", default: "liqo", description: "namespace of the gateway Service" },
    "node-name": {
      type: "string",
      required: true,
      description: "this node's name (its VTEP address is written on it)",
    },
    netns: { type: "string", description: "network namespace of the node (default: the current one)" },
    "vtep-address": { type: "string", required: true, description: "this node's underlay address (VXLAN source)" },
    "vtep-device": {
      type: "string",
      description: "interface of --vtep-address (default: detected, the one holding or routing that address)",
    },
    mtu: { type: "string", description: "VXLAN interface MTU (default 1450)" },
    "resync-period": { type: "string", default: "5", description: "seconds between reconcile passes (drift repair)" },
    ...adminArgs("127.0.0.1:8094"),
  },
  async run({ args }) {
    adminSecurity(args); // bad admin flags fail before anything starts
    try {
      parseIpv4(args["vtep-address"], "--vtep-address");
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const resync = Number(args["resync-period"]);
    if (!(resync > 0))
      throw new CliError(
        `--resync-period must be a positive number of seconds, got ${JSON.stringify(args["resync-period"])}`,
      );
    const mtu = args.mtu === undefined ? undefined : Number(args.mtu);
    if (mtu !== undefined && !(Number.isInteger(mtu) && mtu >= 576 && mtu <= 65535))
      throw new CliError(`--mtu must be a whole number between 576 and 65535, got ${JSON.stringify(args.mtu)}`);
    const log = createLogger({ role: "route", node: args["node-name"] });
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const registry = createRegistry();
    registerProcessMetrics(registry);
    const ip = createIp(createCommandRunner(), args.netns);
    const vtepIp = args["vtep-address"];
    // A device that cannot be chosen keeps the pod running but not ready, its reason in the log and
    // in /readyz; it is looked for again every --resync-period (an interface may come up late).
    let deviceProblem: string | undefined = "looking for the VTEP device";
    let agent: RouteAgent | undefined;
    let stopped = false;
    const starting = (async () => {
      while (!stopped) {
        const choice = await detectVtepDevice(ip, { explicit: args["vtep-device"], address: vtepIp }).catch(
          (err: Error) => ({ ok: false as const, reason: `cannot list interfaces: ${err.message}` }),
        );
        if (choice.ok) {
          deviceProblem = undefined;
          log.info("VTEP device chosen", { device: choice.dev, how: choice.how, address: vtepIp });
          agent = createRouteAgent({
            client,
            registry,
            logger: log,
            nodeName: args["node-name"],
            liqoNamespace: args["liqo-namespace"],
            ip,
            end: { vtepIp, dev: choice.dev, mtu },
            intervalMs: resync * 1000,
          });
          await agent.start();
          return;
        }
        if (choice.reason !== deviceProblem) log.error("no VTEP device", { reason: choice.reason });
        deviceProblem = choice.reason;
        await Bun.sleep(resync * 1000);
      }
    })();
    const admin = await serveAdmin({
      args,
      registry,
      logger: log,
      client,
      title: `liqo route: ${args["node-name"]}`,
      views: { overlay: () => agent?.state() ?? { node: args["node-name"], vtepDevice: deviceProblem } },
      checks: {
        "vtep-device": () => (deviceProblem ? { ok: false, reason: deviceProblem } : true),
        "caches-synced": () => agent?.synced() || { ok: false, reason: "informers are still listing" },
      },
    });
    log.info("route agent running", { admin: admin.url });
    console.log(`admin API on ${admin.url}`);
    await untilSignal();
    stopped = true;
    await starting.catch(() => {});
    await agent?.stop();
    await admin.stop();
  },
});
