import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { Resources } from "../../core/kube/resources.ts";
import type { Service } from "../../core/kube/types.ts";
import { parseStream, recoveredAt, type StreamSample } from "../chaos/traffic.ts";
import { benchQuickstart } from "../quickstart/in-cluster.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { waitFor } from "../support/wait.ts";

const RESTARTS = 3;
const URL = "http://liqo-demo.liqo-demo.svc.cluster.local/";

/** The runs of failed requests in [from, to): each one's length in seconds (first failure to the next answer). */
export function gaps(samples: StreamSample[], from: number, to: number): number[] {
  const out: number[] = [];
  let start: number | undefined;
  for (const s of samples) {
    if (s.at < from || s.at >= to) continue;
    if (s.code !== "200") start ??= s.at;
    else if (start !== undefined) {
      out.push((s.at - start) / 1000);
      start = undefined;
    }
  }
  if (start !== undefined) out.push((to - start) / 1000);
  return out;
}

/** The time of the n-th answer in a row after `after` (the end of the first clean window), if there is one. */
export function cleanUntil(samples: StreamSample[], after: number, n: number): number | undefined {
  let ok = 0;
  for (const s of samples) {
    if (s.at < after) continue;
    ok = s.code === "200" ? ok + 1 : 0;
    if (ok >= n) return s.at + 1;
  }
  return undefined;
}

const q = await benchQuickstart();
const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);
const must = async (cluster: string, ...args: string[]) => {
  const r = await kubectl(cluster, ...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} on ${cluster}: ${r.err || r.out}`);
  return r.out;
};
const nodePort = async (cluster: "rome" | "milan") =>
  (await q[cluster].get<Service>(Resources.services, "liqo-gateway", "liqo")).spec?.ports?.[0]?.nodePort;
const read = async () => parseStream(await must("rome", "exec", "-n", "liqo-demo", "curl", "--", "cat", "/tmp/stream"));
const connected = async () => {
  for (const c of [q.rome, q.milan]) {
    const t = await c.list<TunnelEndpoint>(TunnelEndpointResource);
    if (t.items[0]?.status?.connection?.status !== "Connected") return false;
  }
  return true;
};

try {
  const loop = `while [ ! -f /tmp/stop ]; do echo "$(date +%s%3N) $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 ${URL})" >> /tmp/stream; sleep 0.1; done`;
  await must(
    "rome",
    "exec",
    "-n",
    "liqo-demo",
    "curl",
    "--",
    "sh",
    "-c",
    `rm -f /tmp/stream /tmp/stop; (setsid sh -c '${loop.replace(/'/g, "'\\''")}' >/dev/null 2>&1 &); echo streaming`,
  );
  const rows: string[] = [];
  for (const layout of ["distinct node ports", "one node port on both"] as const) {
    if (layout === "one node port on both") {
      const port = await nodePort("rome");
      await must(
        "milan",
        "patch",
        "service",
        "-n",
        "liqo",
        "liqo-gateway",
        "--type=json",
        "-p",
        JSON.stringify([{ op: "replace", path: "/spec/ports/0/nodePort", value: port }]),
      );
      // Milan's gateway publishes its new endpoint; rome's tunnel follows.
      await must("milan", "rollout", "restart", "deployment/liqo-gateway", "-n", "liqo");
      await must("milan", "rollout", "status", "deployment/liqo-gateway", "-n", "liqo", "--timeout=180s");
    }
    const ports = `rome ${await nodePort("rome")}, milan ${await nodePort("milan")}`;
    await waitFor("the tunnel Connected on both sides", connected, { timeoutMs: 180_000, intervalMs: 1000 });
    const settled = Date.now();
    await waitFor("the stream answering 30 in a row", async () => recoveredAt(await read(), settled), {
      timeoutMs: 180_000,
      intervalMs: 1000,
    });
    for (let i = 1; i <= RESTARTS; i++) {
      const from = Date.now();
      await must("milan", "rollout", "restart", "deployment/liqo-gateway", "-n", "liqo");
      await must("milan", "rollout", "status", "deployment/liqo-gateway", "-n", "liqo", "--timeout=180s");
      const ready = Date.now();
      // 80 answers in a row (about 10 s) after the new pod is Ready: a second gap would show before.
      const back = await waitFor(
        `the stream answering 80 in a row after gateway restart ${i}`,
        async () => cleanUntil(await read(), ready, 80),
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      const samples = await read();
      const g = gaps(samples, from, back);
      const lost = samples.filter((s) => s.at >= from && s.at < back && s.code !== "200").length;
      const row = `  ${layout.padEnd(22)} (${ports})  restart ${i}: ${String(lost).padStart(3)} requests lost, ${g.length} gap(s) [${g.map((x) => x.toFixed(1)).join(", ")}] s, longest ${Math.max(0, ...g).toFixed(1)} s`;
      console.log(row);
      rows.push(row);
    }
  }
  console.log(`\ngateway restarts in milan, a request from rome every 0.1 s (1 s timeout):\n${rows.join("\n")}`);
} finally {
  await kubectl("rome", "exec", "-n", "liqo-demo", "curl", "--", "touch", "/tmp/stop").catch(() => undefined);
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
