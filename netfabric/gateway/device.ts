// The WireGuard device of the active gateway: the kernel module when present, wireguard-go
// otherwise (this machine), and the teardown a replica does when it stops being the leader.
import { existsSync } from "node:fs";
import { CommandError } from "../os/errors.ts";
import type { IpAdapter } from "../os/ip.ts";
import type { NftAdapter } from "../os/nft.ts";
import type { CommandRunner } from "../os/run.ts";
import { startWireguardGo, type WireguardGoDevice } from "../os/wireguard-go.ts";
import { createUapiClient, socketPathOf, type UapiClient } from "../os/wireguard-uapi.ts";
import { createWgToolClient } from "../os/wireguard-tool.ts";
import type { GatewayOptions } from "./config.ts";

export type WireguardMode = "auto" | "kernel" | "userspace";
/** Which WireGuard moves the packets: the kernel module or wireguard-go. */
export type WireguardImplementation = "kernel" | "userspace";
export const WIREGUARD_IMPLEMENTATIONS: readonly WireguardImplementation[] = ["kernel", "userspace"];

export interface ActiveDevice {
  /** adopted: a wireguard-go device kept from a previous run of this replica. */
  readonly kind: "kernel" | "userspace" | "adopted";
  readonly pid?: number;
  readonly client: UapiClient;
  stop(): Promise<void>;
}

async function linkExists(ip: IpAdapter, name: string): Promise<boolean> {
  try {
    return (await ip.json(["link", "show", "dev", name])).length > 0;
  } catch (err) {
    if (err instanceof CommandError) return false;
    throw err;
  }
}

/** The implementation behind a device: an adopted device is a wireguard-go one (only those leave a UAPI socket). */
export const implementationOf = (kind: ActiveDevice["kind"]): WireguardImplementation =>
  kind === "kernel" ? "kernel" : "userspace";

/** Creates (or adopts, after a restart) the device `name` in the netns. */
export async function openDevice(o: {
  name: string;
  netns?: string;
  mode: WireguardMode;
  ip: IpAdapter;
  runner: CommandRunner;
  /** Starts wireguard-go (tests pass a fake). */
  startUserspace?: typeof startWireguardGo;
}): Promise<ActiveDevice> {
  // A device left by a previous run of this replica whose wireguard-go is still alive: keep it,
  // traffic does not stop. (With dieWithParent this only happens after a clean handover.)
  if (o.mode !== "kernel" && existsSync(socketPathOf(o.name))) {
    const client = createUapiClient(o.name);
    try {
      await client.get();
      if (await linkExists(o.ip, o.name))
        return {
          kind: "adopted",
          client,
          stop: async () => {
            await o.ip.batch([`link del ${o.name}`]).catch(() => undefined);
          },
        };
    } catch {
      /* stale socket: startWireguardGo removes it */
    }
  }
  if (o.mode !== "userspace") {
    try {
      if (!(await linkExists(o.ip, o.name))) await o.ip.batch([`link add ${o.name} type wireguard`]);
      return {
        kind: "kernel",
        client: createWgToolClient(o.name, o.runner, o.netns),
        stop: () => o.ip.batch([`link del ${o.name}`]),
      };
    } catch (err) {
      if (o.mode === "kernel")
        throw new Error(
          `the wireguard kernel module is not available (${(err as Error).message}); use --wireguard userspace`,
        );
    }
  }
  const dev: WireguardGoDevice = await (o.startUserspace ?? startWireguardGo)({
    name: o.name,
    netns: o.netns,
    dieWithParent: true,
    timeoutMs: 10_000,
  });
  return { kind: "userspace", pid: dev.pid, client: createUapiClient(o.name), stop: () => dev.stop() };
}

/** Removes everything the active gateway configured in the netns (the device takes its routes with it). */
export async function teardown(
  o: { ip: IpAdapter; nft: NftAdapter; device?: ActiveDevice; vxlan?: string },
  options: GatewayOptions,
): Promise<string[]> {
  const done: string[] = [];
  if (o.device) {
    await o.device.stop();
    done.push("device stopped");
  }
  const rules = await o.ip.json<{ priority: number; dst?: string; dstlen?: number; table: string }>(["rule", "show"]);
  const lines = rules
    .filter((r) => r.table === String(options.routingTable))
    .map(
      (r) =>
        `rule del ${r.dst ? `to ${r.dst}/${r.dstlen ?? 32} ` : ""}lookup ${options.routingTable} priority ${r.priority}`,
    );
  if (lines.length > 0) {
    await o.ip.batch(lines);
    done.push(...lines);
  }
  if (await o.nft.listTable("ip", options.natTable)) {
    await o.nft.apply(`table ip ${options.natTable} {}\ndelete table ip ${options.natTable}\n`);
    done.push(`nft table ${options.natTable} deleted`);
  }
  if (o.vxlan && (await linkExists(o.ip, o.vxlan))) {
    await o.ip.batch([`link del ${o.vxlan}`]);
    done.push(`link ${o.vxlan} deleted`);
  }
  return done;
}
