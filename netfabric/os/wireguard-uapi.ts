// WireGuard's cross-platform UAPI (the text protocol on /var/run/wireguard/<if>.sock):
// `set=1` / `get=1` requests of key=value lines ended by a blank line, answered with `errno=N`.
import { WireguardError } from "./errors.ts";
import { keyFromHex, keyToHex } from "./wireguard-keys.ts";

export interface WireguardPeer {
  publicKey: string;
  endpoint?: string;
  allowedIps: string[];
  persistentKeepalive?: number;
}

export interface WireguardConfig {
  privateKey?: string;
  listenPort?: number;
  peers: WireguardPeer[];
}

export interface WireguardPeerStatus extends WireguardPeer {
  lastHandshakeSec: number;
  rxBytes: number;
  txBytes: number;
}

export interface WireguardStatus {
  privateKey?: string;
  listenPort?: number;
  peers: WireguardPeerStatus[];
}

/** Renders a `set` that makes the device exactly `config` (peers not listed are removed). */
export function renderSet(config: WireguardConfig): string {
  const lines = ["set=1"];
  if (config.privateKey) lines.push(`private_key=${keyToHex(config.privateKey, "private key")}`);
  if (config.listenPort !== undefined) lines.push(`listen_port=${config.listenPort}`);
  lines.push("replace_peers=true");
  for (const peer of config.peers) {
    lines.push(`public_key=${keyToHex(peer.publicKey, "peer public key")}`);
    if (peer.endpoint) lines.push(`endpoint=${peer.endpoint}`);
    lines.push(`persistent_keepalive_interval=${peer.persistentKeepalive ?? 0}`);
    lines.push("replace_allowed_ips=true");
    for (const ip of peer.allowedIps) lines.push(`allowed_ip=${ip}`);
  }
  return lines.join("\n") + "\n\n";
}

/** Parses a `get` answer; throws on a non-zero errno. */
export function parseGet(text: string, device: string): WireguardStatus {
  const status: WireguardStatus = { peers: [] };
  let peer: WireguardPeerStatus | undefined;
  let errno: number | undefined;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const eq = line.indexOf("=");
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    switch (key) {
      case "private_key":
        status.privateKey = keyFromHex(value);
        break;
      case "listen_port":
        status.listenPort = Number(value);
        break;
      case "public_key":
        peer = { publicKey: keyFromHex(value), allowedIps: [], lastHandshakeSec: 0, rxBytes: 0, txBytes: 0 };
        status.peers.push(peer);
        break;
      case "endpoint":
        if (peer) peer.endpoint = value;
        break;
      case "allowed_ip":
        peer?.allowedIps.push(value);
        break;
      case "persistent_keepalive_interval":
        if (peer) peer.persistentKeepalive = Number(value);
        break;
      case "last_handshake_time_sec":
        if (peer) peer.lastHandshakeSec = Number(value);
        break;
      case "rx_bytes":
        if (peer) peer.rxBytes = Number(value);
        break;
      case "tx_bytes":
        if (peer) peer.txBytes = Number(value);
        break;
      case "errno":
        errno = Number(value);
        break;
      default:
        break; // fwmark, protocol_version, preshared_key, …: not needed by the gateway
    }
  }
  if (errno !== undefined && errno !== 0)
    throw new WireguardError(`get on ${device} failed with errno ${errno}`, device, errno);
  return status;
}

export interface UapiClient {
  readonly device: string;
  get(): Promise<WireguardStatus>;
  set(config: WireguardConfig): Promise<void>;
}

export function socketPathOf(device: string): string {
  return `/var/run/wireguard/${device}.sock`;
}

/** One request per connection, as wg(8) does; the device answers and keeps the socket open. */
async function request(socketPath: string, device: string, body: string): Promise<string> {
  const answer = Promise.withResolvers<string>();
  let received = "";
  const decoder = new TextDecoder();
  try {
    const socket = await Bun.connect({
      unix: socketPath,
      socket: {
        data(s, chunk) {
          received += decoder.decode(chunk, { stream: true });
          if (received.endsWith("\n\n")) {
            answer.resolve(received);
            s.end();
          }
        },
        close() {
          answer.resolve(received);
        },
        error(_s, err) {
          answer.reject(err);
        },
      },
    });
    socket.write(body);
  } catch (err) {
    throw new WireguardError(
      `cannot reach ${socketPath} (${(err as Error).message}); is wireguard-go running for ${device}?`,
      device,
      -1,
      { cause: err },
    );
  }
  return answer.promise;
}

export function createUapiClient(device: string, socketPath = socketPathOf(device)): UapiClient {
  return {
    device,
    async get() {
      return parseGet(await request(socketPath, device, "get=1\n\n"), device);
    },
    async set(config) {
      const answer = await request(socketPath, device, renderSet(config));
      const errno = Number(/errno=(-?\d+)/.exec(answer)?.[1] ?? NaN);
      if (errno !== 0) {
        throw new WireguardError(
          `set on ${device} failed (${answer.trim() || "no answer"}); check keys, port and allowed IPs`,
          device,
          Number.isNaN(errno) ? -1 : errno,
        );
      }
    },
  };
}
