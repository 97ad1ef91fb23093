// The same UapiClient interface through wg(8), for the kernel module (which speaks netlink, not
// the UAPI socket): `wg show <dev> dump` to read, `wg setconf <dev> /dev/stdin` to replace.
import type { CommandRunner } from "./run.ts";
import type { UapiClient, WireguardConfig, WireguardStatus } from "./wireguard-uapi.ts";

/** `wg show dump`: the interface line, then one tab-separated line per peer. */
export function parseDump(text: string): WireguardStatus {
  const [iface, ...peers] = text
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\t"));
  const none = (v: string | undefined) => (v === undefined || v === "(none)" || v === "off" ? undefined : v);
  return {
    privateKey: none(iface?.[0]),
    listenPort: iface?.[2] === undefined ? undefined : Number(iface[2]),
    peers: peers.map((p) => ({
      publicKey: p[0]!,
      endpoint: none(p[2]),
      allowedIps: none(p[3])?.split(",") ?? [],
      lastHandshakeSec: Number(p[4] ?? 0),
      rxBytes: Number(p[5] ?? 0),
      txBytes: Number(p[6] ?? 0),
      persistentKeepalive: Number(none(p[7]) ?? 0),
    })),
  };
}

export function renderConf(config: WireguardConfig): string {
  const lines = ["[Interface]"];
  if (config.privateKey) lines.push(`PrivateKey = ${config.privateKey}`);
  if (config.listenPort !== undefined) lines.push(`ListenPort = ${config.listenPort}`);
  for (const p of config.peers) {
    lines.push("", "[Peer]", `PublicKey = ${p.publicKey}`);
    if (p.endpoint) lines.push(`Endpoint = ${p.endpoint}`);
    if (p.allowedIps.length > 0) lines.push(`AllowedIPs = ${p.allowedIps.join(", ")}`);
    if (p.persistentKeepalive) lines.push(`PersistentKeepalive = ${p.persistentKeepalive}`);
  }
  return lines.join("\n") + "\n";
}

export function createWgToolClient(device: string, runner: CommandRunner, netns?: string): UapiClient {
  return {
    device,
    async get() {
      return parseDump(await runner.run(["wg", "show", device, "dump"], { netns }));
    },
    async set(config) {
      await runner.run(["wg", "setconf", device, "/dev/stdin"], { netns, stdin: renderConf(config) });
    },
  };
}
