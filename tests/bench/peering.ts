// Peering benchmarks. Prints numbers, asserts nothing.
//
// 1. Rounds (two rig clusters): from `liqoctl peer out-of-band` (the command `liqoctl generate
//    peer-command` printed on the provider) to its exit, which is when the virtual node is Ready;
//    then `liqoctl unpeer out-of-band` to its exit (node gone, identity released). The auth
//    service and the controllers in this process (tests/e2e/peering-rig.ts), liqoctl as a real
//    subprocess (its start-up, about 0.3 s, is included).
// 2. Hub (N+1 rig clusters, 1 node each): one hub runs the N generated commands at once; the time
//    from launching the first `liqoctl peer out-of-band` to all N virtual nodes Ready on the hub,
//    and the hub controller manager's RSS. That controller manager (foreigncluster controller with
//    its N in-process virtual kubelets and CRD replicators) runs as its own process
//    (`liqo controller-manager` via tests/quickstart/roles.ts) so /proc tells its RSS; the
//    providers' sides run in this process.
//
// Usage: bun tests/bench/peering.ts [--rounds 3] [--hub 10]   (0 skips a part)
import { processUsage } from "./procstat.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { findTenantNamespace } from "../../core/peering/auth/index.ts";
import {
  generatedPeerCommand,
  liqoctl,
  startConsumerProcesses,
  startLiqoSide,
  type LiqoSide,
} from "../e2e/peering-rig.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = arg("rounds", 3);
const HUB = arg("hub", 10);
const s = (ms: number) => `${(ms / 1000).toFixed(2)}s`;

async function rounds(n: number) {
  const rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  const [rome, milan] = await Promise.all([startLiqoSide(rig, "rome"), startLiqoSide(rig, "milan")]);
  const peer: number[] = [];
  const unpeer: number[] = [];
  try {
    for (let round = 1; round <= n; round++) {
      const args = await generatedPeerCommand(milan);
      let t = performance.now();
      const p = await liqoctl(rome, ...args, "--timeout=300s");
      if (p.code !== 0) throw new Error(`round ${round}: liqoctl peer out-of-band failed: ${p.err}`);
      peer.push(performance.now() - t);
      if (!(await rome.client.find(Resources.nodes, "liqo-milan")))
        throw new Error("liqoctl succeeded but liqo-milan is missing");
      t = performance.now();
      const u = await liqoctl(rome, "unpeer", "out-of-band", "milan", "--timeout=300s");
      if (u.code !== 0) throw new Error(`round ${round}: liqoctl unpeer out-of-band failed: ${u.err}`);
      unpeer.push(performance.now() - t);
      // The next round starts once milan has finished revoking rome's identity (not counted).
      await waitFor(
        "milan to revoke rome's identity",
        async () => !(await findTenantNamespace(milan.client, rome.identity.clusterId)),
        { timeoutMs: 180_000, intervalMs: 250 },
      );
      console.log(`round ${round}: peer -> Ready node ${s(peer.at(-1)!)}, unpeer ${s(unpeer.at(-1)!)}`);
    }
    const fmt = (xs: number[]) =>
      `min ${s(Math.min(...xs))}  median ${s(xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!)}  max ${s(Math.max(...xs))}`;
    console.log(`liqoctl peer out-of-band -> Ready virtual node (${n} rounds): ${fmt(peer)}`);
    console.log(`liqoctl unpeer out-of-band (${n} rounds): ${fmt(unpeer)}`);
  } finally {
    await rome.stop();
    await milan.stop();
    await rig.down();
  }
}

type Node = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };
const ready = (n: Node) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

async function hub(n: number) {
  const names = Array.from({ length: n }, (_, i) => `provider-${i + 1}`);
  let t = performance.now();
  // A rig holds at most 8 clusters: more providers go to further rigs (same machine; pod CIDRs may
  // repeat across rigs, which peering without networking does not mind).
  const all = ["hub", ...names];
  const rigs: TestRig[] = [];
  const providers: LiqoSide[] = [];
  try {
    for (let i = 0; i < all.length; i += 8)
      rigs.push(await startTestRig({ clusters: Math.min(8, all.length - i), names: all.slice(i, i + 8), nodes: 1 }));
    const rig = rigs[0]!;
    const rigOf = (name: string) => rigs.find((r) => r.clusters.some((c) => c.name === name))!;
    console.log(`hub: ${rigs.length} rig(s) of ${n + 1} clusters up in ${s(performance.now() - t)}`);
    // The hub's liqo as processes (auth, controller manager), so /proc tells the controller manager's RSS.
    const hub = await startConsumerProcesses(rig, "hub");
    const { client, pid } = hub;
    // Providers one at a time: each start lists and watches on its own cluster.
    for (const name of names) providers.push(await startLiqoSide(rigOf(name), name, {}, { consumer: false }));
    const commands = await Promise.all(providers.map((p) => generatedPeerCommand(p)));
    const idle = processUsage(pid);
    console.log(`hub: controller manager (pid ${pid}) before peering: RSS ${idle.rssMiB.toFixed(0)} MiB`);

    let peak = idle.rssMiB;
    const sampler = setInterval(() => {
      const rss = processUsage(pid).rssMiB; // NaN once it exited: reported below
      if (!Number.isNaN(rss)) peak = Math.max(peak, rss);
    }, 250);
    t = performance.now();
    const exits = commands.map((args, i) =>
      liqoctl(hub, ...args, "--timeout=900s").then((r) => {
        if (r.code !== 0) throw new Error(`liqoctl peer out-of-band ${names[i]} failed (${r.code}): ${r.err}`);
        return performance.now() - t;
      }),
    );
    await waitFor(
      `${n} Ready virtual nodes on the hub`,
      async () => {
        const nodes = (await client.list<Node>(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" })).items;
        return nodes.filter(ready).length === n;
      },
      { timeoutMs: 900_000, intervalMs: 250 },
    );
    const allReady = performance.now() - t;
    const done = await Promise.all(exits);
    clearInterval(sampler);
    const after = processUsage(pid);
    console.log(`hub: ${n} providers, first liqoctl peer out-of-band -> all ${n} virtual nodes Ready: ${s(allReady)}`);
    console.log(`hub: liqoctl exits: first ${s(Math.min(...done))}, last ${s(Math.max(...done))}`);
    console.log(
      `hub: controller manager RSS: peak ${Math.max(peak, after.rssMiB).toFixed(0)} MiB sampled, ${after.peakMiB.toFixed(0)} MiB VmHWM, ${after.rssMiB.toFixed(0)} MiB now (${idle.rssMiB.toFixed(0)} MiB before peering)`,
    );
  } finally {
    for (const p of providers) await p.stop();
    for (const r of rigs) await r.down();
  }
}

if (ROUNDS > 0) await rounds(ROUNDS);
if (HUB > 0) await hub(HUB);
