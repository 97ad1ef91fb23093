// A network path that can be black-holed: a namespace joined to the host by a veth pair, whose only
// way to the rig's API servers (they listen on the host's 127.0.0.1) is a TCP forwarder on the
// host's end of the veth. `blackhole(port)` drops, inside the namespace, every packet to and from
// one forwarder (nothing is refused, nothing is reset, as when a peer's link goes dark);
// `heal(port)` deletes those rules. Kubeconfigs keep verifying the API server's certificate by
// tls-server-name (the rig's certificates name localhost, not the veth address).
import type { Socket, TCPSocketListener } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import type { Lab } from "./lab.ts";

export interface PartitionPath {
  readonly ns: string;
  /** The host's address on the veth, where the forwarders listen. */
  readonly hostIp: string;
  /** The namespace's address on the veth (the host reaches services bound there). */
  readonly nsIp: string;
  /** Forwards hostIp:<returned port> to 127.0.0.1:target. */
  forward(target: number): number;
  /** A copy of `kubeconfig` at `out` whose server is a new forwarder (`port`) to its API server. */
  kubeconfigVia(kubeconfig: string, out: string): { file: string; port: number };
  blackhole(port: number): Promise<void>;
  heal(port: number): Promise<void>;
  close(): void;
}

type Pipe = { peer?: Socket<Pipe>; pending: Uint8Array[] };

function forwarder(hostname: string, target: number): TCPSocketListener<Pipe> {
  return Bun.listen<Pipe>({
    hostname,
    port: 0,
    socket: {
      async open(client) {
        client.data = { pending: [] };
        try {
          const upstream = await Bun.connect<Pipe>({
            hostname: "127.0.0.1",
            port: target,
            data: { peer: client, pending: [] },
            socket: {
              data(_s, d) {
                client.write(d);
              },
              close() {
                client.end();
              },
              error() {
                client.end();
              },
            },
          });
          client.data.peer = upstream;
          for (const chunk of client.data.pending.splice(0)) upstream.write(chunk);
        } catch {
          client.end();
        }
      },
      data(client, d) {
        if (client.data.peer) client.data.peer.write(d);
        else client.data.pending.push(new Uint8Array(d));
      },
      close(client) {
        client.data.peer?.end();
      },
      error(client) {
        client.data.peer?.end();
      },
    },
  });
}

export async function createPartitionPath(lab: Lab, role: string): Promise<PartitionPath> {
  const ns = await lab.netns(role);
  // A random /30 in 169.254.0.0/16: link-local, routed nowhere, unlikely to meet another lab's.
  const base = (Math.floor(Math.random() * 250) + 1) * 256 + Math.floor(Math.random() * 63) * 4;
  const ip = (n: number) => `169.254.${Math.floor((base + n) / 256)}.${(base + n) % 256}`;
  const hostIp = ip(1);
  const nsIp = ip(2);
  const hostDev = `lp${lab.id}h`;
  const inNs = (argv: string[]) => lab.sh(ns, argv);
  const host = (argv: string[]) => {
    const p = Bun.spawnSync(argv, { stderr: "pipe" });
    if (p.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${p.stderr.toString()}`);
  };
  host(["ip", "link", "add", hostDev, "type", "veth", "peer", "name", "eth0", "netns", ns]);
  host(["ip", "addr", "add", `${hostIp}/30`, "dev", hostDev]);
  host(["ip", "link", "set", hostDev, "up"]);
  await inNs(["ip", "addr", "add", `${nsIp}/30`, "dev", "eth0"]);
  await inNs(["ip", "link", "set", "eth0", "up"]);
  await inNs(["nft", "add", "table", "inet", "partition"]);
  await inNs(["nft", "add", "chain", "inet", "partition", "out", "{ type filter hook output priority 0 ; }"]);
  await inNs(["nft", "add", "chain", "inet", "partition", "in", "{ type filter hook input priority 0 ; }"]);

  const listeners: TCPSocketListener<Pipe>[] = [];
  const forward = (target: number) => {
    const l = forwarder(hostIp, target);
    listeners.push(l);
    return l.port;
  };
  return {
    ns,
    hostIp,
    nsIp,
    forward,
    kubeconfigVia(kubeconfig, out) {
      const text = readFileSync(kubeconfig, "utf8");
      const server = /server:\s*(\S+)/.exec(text)?.[1];
      if (!server) throw new Error(`no server in ${kubeconfig}`);
      const port = forward(Number(new URL(server).port));
      const raw = Bun.YAML.parse(text) as { clusters: { cluster: Record<string, unknown> }[] };
      for (const c of raw.clusters)
        Object.assign(c.cluster, { server: `https://${hostIp}:${port}`, "tls-server-name": "localhost" });
      writeFileSync(out, JSON.stringify(raw));
      return { file: out, port };
    },
    // Both directions, with a comment naming the port, so heal deletes exactly these rules.
    async blackhole(port) {
      await inNs([
        "nft",
        "add",
        "rule",
        "inet",
        "partition",
        "out",
        "ip",
        "daddr",
        hostIp,
        "tcp",
        "dport",
        String(port),
        "drop",
        "comment",
        `"bh-${port}"`,
      ]);
      await inNs([
        "nft",
        "add",
        "rule",
        "inet",
        "partition",
        "in",
        "ip",
        "saddr",
        hostIp,
        "tcp",
        "sport",
        String(port),
        "drop",
        "comment",
        `"bh-${port}"`,
      ]);
    },
    async heal(port) {
      for (const chain of ["out", "in"]) {
        const listing = await inNs(["nft", "-a", "list", "chain", "inet", "partition", chain]);
        for (const m of listing.matchAll(new RegExp(`comment "bh-${port}" # handle (\\d+)`, "g"))) {
          await inNs(["nft", "delete", "rule", "inet", "partition", chain, "handle", m[1]!]);
        }
      }
    },
    close() {
      for (const l of listeners.splice(0)) l.stop(true);
      // The namespace (and with it its end of the veth, so the pair) goes in lab.cleanup().
      Bun.spawnSync(["ip", "link", "del", hostDev]);
    },
  };
}
