// `ip` (iproute2) adapter: JSON reads and atomic-ish batched writes, optionally in a netns.
import type { CommandRunner } from "./run.ts";

export interface IpAdapter {
  readonly netns?: string;
  /** `ip -json <args>`, parsed. Empty output (e.g. no routes) is an empty array. */
  json<T = unknown>(args: readonly string[]): Promise<T[]>;
  /** `ip -batch -`: one command per line, stops at the first failing line. */
  batch(lines: readonly string[]): Promise<void>;
  /** `bridge -json <args>` (fdb), parsed. */
  bridgeJson<T = unknown>(args: readonly string[]): Promise<T[]>;
  bridge(args: readonly string[]): Promise<void>;
}

export function createIp(runner: CommandRunner, netns?: string): IpAdapter {
  // `ip -n` enters the namespace itself; cheaper than `ip netns exec` and needs no mount namespace.
  const ns = netns ? ["-n", netns] : [];
  const parse = <T>(text: string): T[] => (text.trim() === "" ? [] : (JSON.parse(text) as T[]));
  return {
    netns,
    async json(args) {
      return parse(await runner.run(["ip", ...ns, "-json", ...args]));
    },
    async batch(lines) {
      if (lines.length === 0) return;
      await runner.run(["ip", ...ns, "-batch", "-"], { stdin: lines.join("\n") + "\n" });
    },
    async bridgeJson(args) {
      return parse(await runner.run(["bridge", ...ns, "-json", ...args]));
    },
    async bridge(args) {
      await runner.run(["bridge", ...ns, ...args]);
    },
  };
}
