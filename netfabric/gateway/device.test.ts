// How openDevice picks the WireGuard implementation, against fakes of `ip` and of wireguard-go:
// the kernel module when `ip link add … type wireguard` works, wireguard-go otherwise (auto), a
// clear error when the kernel is demanded and absent, and never the module in userspace mode.
import { describe, expect, test } from "bun:test";
import { CommandError } from "../os/errors.ts";
import type { IpAdapter } from "../os/ip.ts";
import type { CommandRunner } from "../os/run.ts";
import type { StartOptions, WireguardGoDevice } from "../os/wireguard-go.ts";
import { implementationOf, openDevice, type WireguardMode } from "./device.ts";

/** A netns whose kernel has (or lacks) the wireguard module; records every `ip` line and wireguard-go start. */
function fakeHost(hasModule: boolean) {
  const links = new Set<string>();
  const lines: string[] = [];
  const started: StartOptions[] = [];
  const ip: IpAdapter = {
    async json<T>(args: readonly string[]) {
      const name = args.at(-1)!;
      if (args[0] === "link" && !links.has(name))
        throw new CommandError(["ip", "-json", ...args], 1, `Device "${name}" does not exist.`);
      return [{ ifname: name }] as T[];
    },
    async batch(batch) {
      for (const line of batch) {
        lines.push(line);
        const add = /^link add (\S+) type wireguard$/.exec(line);
        if (add) {
          if (!hasModule) throw new CommandError(["ip", "-batch", "-"], 2, "Error: Unknown device type.");
          links.add(add[1]!);
        }
        const del = /^link del (\S+)$/.exec(line);
        if (del) links.delete(del[1]!);
      }
    },
    bridgeJson: async () => [],
    bridge: async () => undefined,
  };
  const runner: CommandRunner = { run: async () => "" };
  const startUserspace = async (o: StartOptions): Promise<WireguardGoDevice> => {
    started.push(o);
    return { name: o.name, pid: 4242, socketPath: `/nonexistent/${o.name}.sock`, stop: async () => undefined };
  };
  return { ip, runner, startUserspace, lines, started, links };
}

// A name no wireguard-go on this machine uses, so no UAPI socket is adopted.
const name = `lqt${process.pid.toString(36)}`.slice(0, 15);
const open = (host: ReturnType<typeof fakeHost>, mode: WireguardMode) =>
  openDevice({ name, mode, ip: host.ip, runner: host.runner, startUserspace: host.startUserspace });

describe("openDevice", () => {
  test("auto with the kernel module: a kernel device, wireguard-go is not started", async () => {
    const host = fakeHost(true);
    const dev = await open(host, "auto");
    expect(dev.kind).toBe("kernel");
    expect(implementationOf(dev.kind)).toBe("kernel");
    expect(host.lines).toEqual([`link add ${name} type wireguard`]);
    expect(host.started).toEqual([]);
    await dev.stop();
    expect(host.links.has(name)).toBe(false);
  });

  test("auto without the module: wireguard-go, after the kernel was tried", async () => {
    const host = fakeHost(false);
    const dev = await open(host, "auto");
    expect(dev.kind).toBe("userspace");
    expect(implementationOf(dev.kind)).toBe("userspace");
    expect(dev.pid).toBe(4242);
    expect(host.lines).toEqual([`link add ${name} type wireguard`]);
    expect(host.started.map((s) => s.name)).toEqual([name]);
    // dieWithParent: a crashed gateway leaves no wireguard-go holding the port.
    expect(host.started[0]!.dieWithParent).toBe(true);
  });

  test("kernel without the module: an error naming the fix, and no wireguard-go", async () => {
    const host = fakeHost(false);
    const err = await open(host, "kernel").catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain("the wireguard kernel module is not available");
    expect((err as Error).message).toContain("Unknown device type");
    expect((err as Error).message).toContain("use --wireguard userspace");
    expect(host.started).toEqual([]);
  });

  test("kernel with the module: a kernel device", async () => {
    const host = fakeHost(true);
    expect((await open(host, "kernel")).kind).toBe("kernel");
    expect(host.started).toEqual([]);
  });

  test("userspace never tries the module, even where it exists", async () => {
    const host = fakeHost(true);
    const dev = await open(host, "userspace");
    expect(dev.kind).toBe("userspace");
    expect(host.lines).toEqual([]);
    expect(host.started.map((s) => s.name)).toEqual([name]);
  });

  test("a kernel device left by a previous run is reused, not added twice", async () => {
    const host = fakeHost(true);
    host.links.add(name);
    const dev = await open(host, "auto");
    expect(dev.kind).toBe("kernel");
    expect(host.lines).toEqual([]);
  });

  test("an adopted wireguard-go device reports userspace", () => {
    expect(implementationOf("adopted")).toBe("userspace");
  });
});
