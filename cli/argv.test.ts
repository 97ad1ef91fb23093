import { describe, expect, test } from "bun:test";
import { renderUsage } from "citty";
import { canonicalFlags, commandLine, parsedCommandLine, withUsageAliases } from "./argv.ts";
import { liqo } from "./liqo.ts";
import { main } from "./main.ts";

// Each row: a command line as Liqo's documentation (v0.5, or 1.x where we follow 1.x) writes it,
// and the same with our names. Both must reach the same command with the same arguments.
const sameAsOurs: [string, string[], string[]][] = [
  [
    "move volume --target-node (Liqo's name), volume's alias pvc",
    ["move", "pvc", "data", "-n", "apps", "--target-node", "milan-node-1"],
    ["move", "volume", "data", "--namespace", "apps", "--node", "milan-node-1"],
  ],
  [
    "move volume --target-node=",
    ["move", "volume", "data", "--namespace=apps", "--target-node=liqo-milan"],
    ["move", "volume", "data", "--namespace=apps", "--node=liqo-milan"],
  ],
  [
    "generate peer-command -n: liqo's namespace",
    ["generate", "peer-command", "-n", "liqo-system", "--only-command"],
    ["generate", "peer-command", "--liqo-namespace", "liqo-system", "--only-command"],
  ],
  ["status --namespace", ["status", "--namespace", "liqo-system"], ["status", "--liqo-namespace", "liqo-system"]],
  [
    "kubectl's flags before the command",
    ["--kubeconfig", "/tmp/florence", "status"],
    ["status", "--kubeconfig", "/tmp/florence"],
  ],
  [
    "--context= before the command",
    ["--context=provider", "peer", "consumer"],
    ["peer", "consumer", "--context", "provider"],
  ],
  [
    "peer oob -n",
    [
      "peer",
      "oob",
      "milan",
      "--auth-url",
      "https://10.0.0.5:30443",
      "--cluster-id",
      "abc",
      "--auth-token",
      "t",
      "-n",
      "liqo-system",
    ],
    [
      "peer",
      "out-of-band",
      "milan",
      "--auth-url",
      "https://10.0.0.5:30443",
      "--cluster-id",
      "abc",
      "--auth-token",
      "t",
      "--liqo-namespace",
      "liqo-system",
    ],
  ],
  [
    "peer ib --remote-namespace",
    [
      "peer",
      "ib",
      "--context=consumer",
      "--remote-context=provider",
      "--namespace",
      "liqo-system",
      "--remote-namespace",
      "liqo",
      "--bidirectional",
    ],
    [
      "peer",
      "in-band",
      "--context=consumer",
      "--remote-context=provider",
      "--liqo-namespace",
      "liqo-system",
      "--remote-liqo-namespace",
      "liqo",
      "--bidirectional",
    ],
  ],
  ["unpeer oob", ["unpeer", "oob", "milan"], ["unpeer", "out-of-band", "milan"]],
  [
    "unpeer ib --remote-namespace -n",
    ["unpeer", "ib", "--remote-context=provider", "--remote-namespace", "liqo", "-n", "liqo-system"],
    [
      "unpeer",
      "in-band",
      "--remote-context=provider",
      "--remote-liqo-namespace",
      "liqo",
      "--liqo-namespace",
      "liqo-system",
    ],
  ],
  [
    "offload ns -l",
    ["offload", "ns", "foo", "-l", "region in (europe)", "--pod-offloading-strategy", "Remote"],
    ["offload", "namespace", "foo", "--selector", "region in (europe)", "--pod-offloading-strategy", "Remote"],
  ],
  ["unoffload ns", ["unoffload", "ns", "foo"], ["unoffload", "namespace", "foo"]],
  [
    "install without a provider is generic",
    ["install", "--api-server-url=https://10.0.0.1:6443", "--pod-cidr=10.244.0.0/16", "--service-cidr", "10.96.0.0/12"],
    [
      "install",
      "generic",
      "--api-server-url=https://10.0.0.1:6443",
      "--pod-cidr=10.244.0.0/16",
      "--service-cidr",
      "10.96.0.0/12",
    ],
  ],
  [
    "upgrade (install's alias), -v",
    ["upgrade", "kind", "--cluster-name", "rome", "-v"],
    ["install", "kind", "--cluster-name", "rome", "--verbose"],
  ],
  ["uninstall -v", ["uninstall", "--purge", "-v"], ["uninstall", "--purge", "--verbose"]],
  [
    "create vn --node-selector (Liqo 1.x)",
    ["create", "vn", "gpu", "--remote-cluster-name", "milan", "--node-selector", "accelerator=gpu"],
    ["create", "virtualnode", "gpu", "--remote-cluster-name", "milan", "--remote-node-selector", "accelerator=gpu"],
  ],
  [
    "delete vn",
    ["delete", "vn", "gpu", "--remote-cluster-name", "milan"],
    ["delete", "virtualnode", "gpu", "--remote-cluster-name", "milan"],
  ],
  ["test net", ["test", "net", "milan", "--basic"], ["test", "network", "milan", "--basic"]],
];

describe("Liqo's names for commands and flags resolve to ours", () => {
  for (const [what, liqos, ours] of sameAsOurs) {
    test(what, async () => {
      const a = await parsedCommandLine(main, liqos);
      const b = await parsedCommandLine(main, ours);
      expect(a).toEqual(b);
    });
  }

  test("move volume: --target-node fills --node, the required flag", async () => {
    const { path, args } = await parsedCommandLine(main, ["move", "pvc", "data", "-n", "apps", "--target-node", "n1"]);
    expect(path).toEqual(["move", "volume"]);
    expect(args).toMatchObject({ name: "data", namespace: "apps", node: "n1" });
  });

  test("-n names liqo's namespace where Liqo's does, and stays the object's namespace elsewhere", async () => {
    expect((await parsedCommandLine(main, ["status", "-n", "liqo-system"])).args["liqo-namespace"]).toBe("liqo-system");
    const vn = await parsedCommandLine(main, ["create", "virtualnode", "x", "-n", "tenant"]);
    expect(vn.args).toMatchObject({ namespace: "tenant", "liqo-namespace": "liqo" });
  });

  test("a word that is no provider is not taken for install's generic default", async () => {
    const line = await commandLine(main, ["install", "kindd"]);
    expect(line.argv).toEqual(["install", "kindd"]);
  });

  test("peer <name> still takes any other word as a cluster name", async () => {
    expect((await commandLine(main, ["peer", "oobx"])).argv).toEqual(["peer", "oobx"]);
    expect((await commandLine(main, ["peer", "oob", "x"])).argv).toEqual(["peer", "out-of-band", "x"]);
  });
});

describe("a flag given under both names", () => {
  const leaf = async (argv: string[]) => (await commandLine(main, argv)).chain.at(-1)!;
  const canonical = async (argv: string[]) => canonicalFlags(await leaf(argv), (await commandLine(main, argv)).argv);

  test.each([
    [["move", "volume", "d", "-n", "a", "--node", "n1", "--target-node", "n2"], "--node and --target-node"],
    [["move", "volume", "d", "-n", "a", "--target-node=n2", "--node=n1"], "--target-node and --node"],
    [["status", "-n", "a", "--liqo-namespace", "b"], "-n and --liqo-namespace"],
    [["uninstall", "-v", "--no-verbose"], "-v and --verbose"],
  ])("with different values is refused: %p", async (argv, names) => {
    await expect(canonical(argv as string[])).rejects.toThrow(`${names} name the same flag`);
  });

  test("with the same value is accepted", async () => {
    expect(await canonical(["move", "volume", "d", "-n", "a", "--node", "n1", "--target-node", "n1"])).toEqual([
      "move",
      "volume",
      "d",
      "--namespace",
      "a",
      "--node",
      "n1",
      "--node",
      "n1",
    ]);
  });

  test("a repeatable flag adds up: -l and --selector are two selector terms (ORed, as in Liqo)", async () => {
    const argv = await canonical(["offload", "namespace", "foo", "-l", "a=b", "--selector", "c=d"]);
    expect(argv).toEqual(["offload", "namespace", "foo", "--selector", "a=b", "--selector", "c=d"]);
  });
});

describe("help shows Liqo's names", () => {
  test("long aliases print as --alias next to ours, short ones as -x", async () => {
    const line = await commandLine(main, ["move", "volume"]);
    const usage = await renderUsage(withUsageAliases(line.chain.at(-1)!));
    expect(usage).toContain("--target-node, --node=<node>");
    expect(usage).toContain("-n, --namespace=<namespace>");
    expect(usage).not.toMatch(/(^|[^-])-target-node/m);
  });

  test("command aliases are listed with the command", async () => {
    const usage = await renderUsage((await commandLine(main, ["peer"])).chain.at(-1)!);
    expect(usage).toContain("out-of-band, oob");
    expect(usage).toContain("in-band, ib");
  });
});

describe("the controller manager's arguments as Liqo's chart writes them", () => {
  const base = ["controller-manager", "--cluster-id", "x", "--cluster-name", "rome"];
  test("--resource-sharing-percentage is --sharing-percentage", async () => {
    const a = await parsedCommandLine(liqo, [...base, "--resource-sharing-percentage=40"]);
    const b = await parsedCommandLine(liqo, [...base, "--sharing-percentage", "40"]);
    expect(a).toEqual(b);
    expect(a.args["sharing-percentage"]).toBe("40");
  });

  test("--cluster-labels=k=v,k2=v2 keeps every = after the first", async () => {
    const { args } = await parsedCommandLine(liqo, [...base, "--cluster-labels=region=eu,provider=onprem"]);
    expect(args["cluster-labels"]).toBe("region=eu,provider=onprem");
  });
});
