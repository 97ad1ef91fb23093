// The clusterset.local responder alone, on localhost (printed, never asserted): queries per second
// over UDP with Q queries in flight, and the answer computation without sockets, for a zone of S
// services (BENCH_DNS_SERVICES, default 1000) with 2 exporting clusters of 3 endpoints each.
import type { ServiceImport } from "../../core/apis/multicluster/serviceimport.ts";
import { answerQuestion, type ImportedSlice, type ZoneView } from "../../core/mcs/dns/records.ts";
import { startDnsServer } from "../../core/mcs/dns/server.ts";
import { encodeQuery, parseQuery, RRType } from "../../core/mcs/dns/wire.ts";
import { percentile } from "./stats.ts";

const services = Number(process.env.BENCH_DNS_SERVICES ?? 1000);
const inFlight = Number(process.env.BENCH_DNS_INFLIGHT ?? 32);
const seconds = Number(process.env.BENCH_DNS_SECONDS ?? 3);

const imports = new Map<string, ServiceImport>();
const slices = new Map<string, ImportedSlice[]>();
for (let i = 0; i < services; i++) {
  const headless = i % 10 === 0;
  imports.set(`ns${i % 20}/svc${i}`, {
    metadata: {},
    spec: {
      type: headless ? "Headless" : "ClusterSetIP",
      ...(headless ? {} : { ips: [`10.96.${i >> 8}.${i & 255}`] }),
      ports: [{ name: "http", protocol: "TCP", port: 80 }],
    },
  } as ServiceImport);
  slices.set(
    `ns${i % 20}/svc${i}`,
    ["c1", "c2"].map((cluster, c) => ({
      cluster,
      ports: [{ name: "http", protocol: "TCP", port: 8080 }],
      endpoints: [0, 1, 2].map((e) => ({ addresses: [`10.${c + 1}.${i >> 8}.${(i * 3 + e) & 255}`], ready: true })),
    })),
  );
}
const view: ZoneView = {
  serviceImport: (ns, name) => imports.get(`${ns}/${name}`),
  slices: (ns, name) => slices.get(`${ns}/${name}`) ?? [],
  hasNamespace: (ns) => [...imports.keys()].some((k) => k.startsWith(`${ns}/`)),
};
const names = Array.from({ length: services }, (_, i) =>
  i % 3 === 2 ? `_http._tcp.svc${i}.ns${i % 20}.svc.clusterset.local` : `svc${i}.ns${i % 20}.svc.clusterset.local`,
);

// 1. The answer alone: parse + compute, no sockets.
{
  const packets = names.map((n, i) => encodeQuery(i & 0xffff, n, n.startsWith("_") ? RRType.SRV : RRType.A));
  const rounds = 200_000;
  const t = performance.now();
  for (let i = 0; i < rounds; i++) {
    const q = parseQuery(packets[i % packets.length]!)!;
    answerQuestion(q.question!, view);
  }
  const us = ((performance.now() - t) * 1000) / rounds;
  console.log(`parse + answer, no sockets: ${us.toFixed(2)} µs per query (${services} services)`);
}

// 2. Over UDP on localhost: inFlight outstanding queries, for `seconds`.
{
  const server = await startDnsServer({ address: "127.0.0.1:0", view });
  const sent = new Map<number, number>();
  const latencies: number[] = [];
  let id = 0;
  let answered = 0;
  let stopAt = 0;
  const { promise: done, resolve } = Promise.withResolvers<void>();
  const client = await Bun.udpSocket({
    socket: {
      data(sock, data) {
        const rid = (data[0]! << 8) | data[1]!;
        const at = sent.get(rid);
        if (at === undefined) return;
        sent.delete(rid);
        latencies.push(performance.now() - at);
        answered++;
        if (performance.now() < stopAt) send(sock);
        else if (sent.size === 0) resolve();
      },
    },
  });
  function send(sock: typeof client) {
    id = (id + 1) & 0xffff;
    const n = names[id % names.length]!;
    sent.set(id, performance.now());
    sock.send(encodeQuery(id, n, n.startsWith("_") ? RRType.SRV : RRType.A), server.udpPort, "127.0.0.1");
  }
  const start = performance.now();
  stopAt = start + seconds * 1000;
  for (let i = 0; i < inFlight; i++) send(client);
  // A lost datagram would leave the loop waiting: give up on stragglers a second after the end.
  await Promise.race([done, Bun.sleep(seconds * 1000 + 1000)]);
  const elapsed = (performance.now() - start) / 1000;
  client.close();
  server.stop();
  latencies.sort((a, b) => a - b);
  console.log(
    `UDP on localhost, ${inFlight} in flight: ${(answered / elapsed).toFixed(0)} queries/s, latency p50 ${percentile(latencies, 50).toFixed(3)} ms, p99 ${percentile(latencies, 99).toFixed(3)} ms (client and server share one process and core)`,
  );
}
