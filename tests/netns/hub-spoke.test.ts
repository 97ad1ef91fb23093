// Hub and spoke A ↔ B ↔ C with no A–C peering: B reflects C's pod to A through B's external
// CIDR (an IPAM NatMapping), and the gateways carry A's traffic to C through B.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { contains, parseCidr, parseIpv4 } from "../../netfabric/ipam/ipv4.ts";
import { masqueradeAddress } from "../../netfabric/gateway/nat-table.ts";
import { buildCluster, connect, syncNatMappings, type Cluster } from "./clusters.ts";
import { createLab, waitFor, type Lab } from "./lab.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");
const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");

// Real namespaces and processes: above bun's 5 s default, below the waits' own deadlines × 2.
const slow = 30_000;

let lab: Lab;
let a: Cluster;
let b: Cluster;
let c: Cluster;

async function sourceSeenByC(target: string, timeoutMs = 1500): Promise<string | undefined> {
  try {
    return (
      (await lab.sh(a.pod, [process.execPath, connectScript, target, "7002", String(timeoutMs)])).trim() || undefined
    );
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  lab = await createLab();
  try {
    a = await buildCluster(lab, "A", "10.200.1.10");
    b = await buildCluster(lab, "B", "10.200.1.20", ["10.0.0.0/15"]);
    c = await buildCluster(lab, "C", "10.200.1.30");
    await connect(lab, a, b, 1);
    await connect(lab, b, c, 2);
    await lab.serve(c.pod, echoScript, ["7002"]);
  } catch (err) {
    await lab.cleanup();
    throw err;
  }
}, slow);

afterAll(async () => {
  await lab?.cleanup();
}, slow);

describe("hub and spoke through B's external CIDR", () => {
  test(
    "A reaches C's pod at the address B reflected, and C sees B's masquerade address",
    async () => {
      // B's virtual kubelet reflects an EndpointSlice of C's pod to A.
      const podCSeenByB = b.ipam.remotePodIp("C", c.podIp);
      const forA = b.ipam.endpointIpFor("A", podCSeenByB);
      expect(b.ipam.endpointIpFor("A", podCSeenByB)).toBe(forA);
      expect(b.ipam.natMappings().find((m) => m.clusterId === "A")!.clusterMappings[podCSeenByB]).toBeDefined();
      syncNatMappings(b);
      for (const x of [a, b, c]) await x.reconciler.reconcile(x.config);

      const seen = await waitFor(`TCP from A's pod to ${forA} (C's pod via B)`, () => sourceSeenByC(forA));
      const viaB = masqueradeAddress(b.config, b.config.peers.find((p) => p.clusterId === "C")!);
      expect(seen).toBe(viaB);
      // C routes that address back to B: it lies in B's external CIDR as C sees it.
      expect(contains(parseCidr(c.config.peers[0]!.remoteNatExternalCidr), parseIpv4(viaB))).toBe(true);
    },
    slow,
  );

  test(
    "releasing the endpoint removes the NatMapping and the path",
    async () => {
      const podCSeenByB = b.ipam.remotePodIp("C", c.podIp);
      const forA = b.ipam.endpointIpFor("A", podCSeenByB);
      b.ipam.releaseEndpointIp("A", podCSeenByB);
      syncNatMappings(b);
      const report = await b.reconciler.reconcile(b.config);
      expect(report.changes.join("\n")).toContain("unexpected: A/natmapping/");
      expect(await sourceSeenByC(forA, 1000)).toBeUndefined();
    },
    slow,
  );
});
