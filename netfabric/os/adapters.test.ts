// The adapters' argv and parsing, with a recording fake runner and a real one for failures.
import { describe, expect, test } from "bun:test";
import { CommandError } from "./errors.ts";
import { createIp } from "./ip.ts";
import { createNft, parseTable } from "./nft.ts";
import { createCommandRunner, type CommandRunner, type RunOptions } from "./run.ts";

function fake(answers: Record<string, string> = {}) {
  const calls: { argv: string[]; options?: RunOptions }[] = [];
  const runner: CommandRunner = {
    async run(argv, options) {
      calls.push({ argv: [...argv], options });
      const key = argv.join(" ");
      if (key in answers) return answers[key]!;
      return "";
    },
  };
  return { runner, calls };
}

describe("ip adapter", () => {
  test("reads JSON inside a netns with -n", async () => {
    const { runner, calls } = fake({ "ip -n ns1 -json route show": '[{"dst":"10.0.0.0/8"}]' });
    expect(await createIp(runner, "ns1").json(["route", "show"])).toEqual([{ dst: "10.0.0.0/8" }]);
    expect(calls[0]!.argv).toEqual(["ip", "-n", "ns1", "-json", "route", "show"]);
  });

  test("batches lines on stdin and skips empty batches", async () => {
    const { runner, calls } = fake();
    const ip = createIp(runner);
    await ip.batch([]);
    await ip.batch(["link set lo up", "addr add 10.0.0.1/32 dev lo"]);
    expect(calls).toEqual([
      { argv: ["ip", "-batch", "-"], options: { stdin: "link set lo up\naddr add 10.0.0.1/32 dev lo\n" } },
    ]);
  });

  test("empty output is an empty list", async () => {
    expect(await createIp(fake().runner).json(["rule", "show"])).toEqual([]);
  });
});

describe("nft adapter", () => {
  test("applies a script atomically through nft -f - in the netns", async () => {
    const { runner, calls } = fake();
    await createNft(runner, "ns2").apply("table ip t {}\n");
    expect(calls).toEqual([{ argv: ["nft", "-f", "-"], options: { stdin: "table ip t {}\n", netns: "ns2" } }]);
  });

  test("parses chains, sets with their elements and rules with their comments", () => {
    const text = JSON.stringify({
      nftables: [
        { metainfo: { version: "1.0.6" } },
        { table: { family: "ip", name: "t", handle: 1 } },
        { chain: { family: "ip", table: "t", name: "prerouting", handle: 1 } },
        {
          set: {
            family: "ip",
            name: "src_a",
            table: "t",
            type: "ipv4_addr",
            handle: 2,
            elem: ["10.0.0.1", "10.0.0.2"],
          },
        },
        { set: { family: "ip", name: "src_b", table: "t", type: "ipv4_addr", handle: 3 } },
        { rule: { family: "ip", table: "t", chain: "prerouting", handle: 4, comment: "B/pod-dnat/abc", expr: [] } },
        { rule: { family: "ip", table: "t", chain: "prerouting", handle: 5, expr: [{ accept: null }] } },
      ],
    });
    expect(parseTable("ip", "t", text)).toEqual({
      family: "ip",
      name: "t",
      chains: ["prerouting"],
      sets: { src_a: ["10.0.0.1", "10.0.0.2"], src_b: [] },
      rules: [
        { chain: "prerouting", handle: 4, comment: "B/pod-dnat/abc", expr: [] },
        { chain: "prerouting", handle: 5, comment: undefined, expr: [{ accept: null }] },
      ],
    });
  });
});

describe("command runner", () => {
  test("a failing command is a CommandError with argv, exit code and stderr", async () => {
    const err = await createCommandRunner()
      .run(["sh", "-c", "echo oops >&2; exit 3"])
      .catch((e) => e);
    expect(err).toBeInstanceOf(CommandError);
    expect(err.exitCode).toBe(3);
    expect(err.stderr).toBe("oops\n");
    expect(err.message).toBe("`sh -c echo oops >&2; exit 3` exited with 3: oops");
  });

  test("stdin reaches the command and stdout comes back", async () => {
    expect(await createCommandRunner().run(["cat"], { stdin: "hello" })).toBe("hello");
  });

  test("a missing binary is a CommandError that says what to install", async () => {
    const err = await createCommandRunner()
      .run(["no-such-binary-liqo"])
      .catch((e) => e);
    expect(err).toBeInstanceOf(CommandError);
    expect(err.message).toContain("scripts/debian-packages.txt");
  });
});
