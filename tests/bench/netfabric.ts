// Network fabric numbers, printed not asserted: IPAM operations per second, and TCP throughput
// through a wireguard-go tunnel with NAT versus a plain veth, in one run (root needed).
// Each transfer is capped at 64 MiB or 3 s. Run: bun tests/bench/netfabric.ts
import { join } from "node:path";
import { createIpam } from "../../netfabric/ipam/index.ts";
import { buildCluster, connect } from "../netns/clusters.ts";
import { createLab } from "../netns/lab.ts";

function opsPerSecond(label: string, n: number, fn: (i: number) => void) {
  const start = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  const ms = performance.now() - start;
  console.log(`${label.padEnd(44)} ${Math.round((n / ms) * 1000).toLocaleString("en")} ops/s (${n} ops, ${ms.toFixed(0)} ms)`);
}

function ipamBench() {
  const ipam = createIpam({ podCidr: "10.200.0.0/16", serviceCidr: "10.96.0.0/12", externalCidr: "10.210.0.0/16" });
  // Every peer collides with the local pod CIDR, so each map is a real pool search; 50 peers stay mapped.
  for (let i = 0; i < 50; i++) ipam.mapRemoteNetworks(`keep${i}`, { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
  opsPerSecond("IPAM map+release colliding peer (50 in use)", 20000, (i) => {
    ipam.mapRemoteNetworks(`p${i}`, { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
    ipam.releaseCluster(`p${i}`);
  });
  ipam.setLocalNetworksSeenBy("keep0", { podCidr: "10.99.0.0/16", externalCidr: "None" });
  opsPerSecond("IPAM remotePodIp", 500000, (i) => ipam.remotePodIp("keep0", `10.200.${(i >> 8) & 255}.${i & 255}`));
  opsPerSecond("IPAM endpointIpFor (local pod)", 500000, (i) => ipam.endpointIpFor("keep0", `10.200.${(i >> 8) & 255}.${i & 255}`));
  opsPerSecond("IPAM endpointIpFor (new external endpoint)", 20000, (i) => ipam.endpointIpFor("keep0", `192.168.${(i >> 8) & 255}.${i & 255}`));
}

async function throughputBench() {
  const lab = await createLab();
  const fixtures = join(import.meta.dir, "..", "netns", "fixtures");
  try {
    const a = await buildCluster(lab, "A", "10.200.1.10");
    const b = await buildCluster(lab, "B", "10.200.1.20");
    await connect(lab, a, b, 1);
    for (const c of [a, b]) await c.reconciler.reconcile(c.config);
    await lab.serve(b.pod, join(fixtures, "sink.ts"), ["7100"]);
    await lab.serve(b.gw, join(fixtures, "sink.ts"), ["7100"]);
    const run = async (label: string, ns: string, target: string) => {
      const out = await lab.sh(ns, [process.execPath, join(fixtures, "blast.ts"), target, "7100", String(64 * 1024 * 1024), "3000"]);
      const { bytes, ms } = JSON.parse(out) as { bytes: number; ms: number };
      console.log(`${label.padEnd(44)} ${((bytes * 8) / (ms / 1000) / 1e6).toFixed(0)} Mbit/s (${(bytes / 1048576).toFixed(1)} MiB in ${ms.toFixed(0)} ms)`);
    };
    await run("TCP over plain veth (gateway ↔ gateway)", a.gw, b.underlayFor.get("A")!);
    await run("TCP pod → pod via wireguard-go + NAT", a.pod, a.ipam.remotePodIp("B", b.podIp));
  } finally {
    await lab.cleanup();
  }
}

ipamBench();
if (process.getuid?.() === 0) await throughputBench();
else console.log("throughput: skipped (needs root for network namespaces)");
