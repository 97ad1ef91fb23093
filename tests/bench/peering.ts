// Peering time: from `liqoctl peer out-of-band` (the command `liqoctl generate peer-command`
// printed on the provider) to its exit, which is when the virtual node is Ready; then
// `liqoctl unpeer out-of-band` to its exit (node gone, identity released). Two rig clusters, the
// auth service and the controllers in this process (tests/e2e/peering-rig.ts), liqoctl as a real
// subprocess (its start-up, about 0.3 s, is included). Prints numbers, asserts nothing.
//
// Usage: bun tests/bench/peering.ts [--rounds 3]
import { Resources } from "../../core/kube/resources.ts";
import { findTenantNamespace } from "../../core/peering/auth/index.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide } from "../e2e/peering-rig.ts";
import { startTestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

const i = process.argv.indexOf("--rounds");
const ROUNDS = i > 0 ? Number(process.argv[i + 1]) : 3;

const rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
const [rome, milan] = await Promise.all([startLiqoSide(rig, "rome"), startLiqoSide(rig, "milan")]);
const peer: number[] = [];
const unpeer: number[] = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    const args = await generatedPeerCommand(milan);
    let t = performance.now();
    const p = await liqoctl(rome, ...args, "--timeout=300s");
    if (p.code !== 0) throw new Error(`round ${round}: liqoctl peer out-of-band failed: ${p.err}`);
    peer.push(performance.now() - t);
    if (!(await rome.client.find(Resources.nodes, "liqo-milan"))) throw new Error("liqoctl succeeded but liqo-milan is missing");
    t = performance.now();
    const u = await liqoctl(rome, "unpeer", "out-of-band", "milan", "--timeout=300s");
    if (u.code !== 0) throw new Error(`round ${round}: liqoctl unpeer out-of-band failed: ${u.err}`);
    unpeer.push(performance.now() - t);
    // The next round starts once milan has finished revoking rome's identity (not counted).
    await waitFor("milan to revoke rome's identity", async () => !(await findTenantNamespace(milan.client, rome.identity.clusterId)), { timeoutMs: 180_000, intervalMs: 250 });
    console.log(`round ${round}: peer -> Ready node ${(peer.at(-1)! / 1000).toFixed(2)}s, unpeer ${(unpeer.at(-1)! / 1000).toFixed(2)}s`);
  }
  const fmt = (xs: number[]) => `min ${(Math.min(...xs) / 1000).toFixed(2)}s  median ${(xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]! / 1000).toFixed(2)}s  max ${(Math.max(...xs) / 1000).toFixed(2)}s`;
  console.log(`liqoctl peer out-of-band -> Ready virtual node (${ROUNDS} rounds): ${fmt(peer)}`);
  console.log(`liqoctl unpeer out-of-band (${ROUNDS} rounds): ${fmt(unpeer)}`);
} finally {
  await rome.stop();
  await milan.stop();
  await rig.down();
}
