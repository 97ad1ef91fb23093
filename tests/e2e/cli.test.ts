// liqoctl as users meet it: every command's help and flag checks (from the live command tree),
// shell completion loaded in a real bash, the markdown docs, the chart (CRDs in sync, helm lint,
// the strict values schema), and against a rig cluster: the compiled binary's `version`,
// `offload --output yaml` and the rendered chart through a server-side dry run.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installCrds } from "../../core/apis/crds.ts";
import { ForeignClusterResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources } from "../../core/kube/resources.ts";
import { main } from "../../cli/main.ts";
import { liqo } from "../../cli/liqo.ts";
import { unknownFlags } from "../../cli/run.ts";
import { allCommands, commandTree, type CommandNode } from "../../cli/tree.ts";
import { docFileName } from "../../cli/docs.ts";
import { clientVersionFastPath } from "../../cli/version.ts";
import { findHelm } from "../../cli/install/helm.ts";
import { staleCrdFiles } from "../../scripts/chart-crds.ts";
import { buildLiqoctl, hostTarget, linkKubectlPlugin } from "../../scripts/build-liqoctl.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { checkoutVersion } from "../rig/images.ts";
import { waitFor } from "../support/wait.ts";
import { liqoctl, repoRoot, run } from "./liqoctl-run.ts";

let tree: CommandNode;
const tmp = mkdtempSync(join(tmpdir(), "liqoctl-cli-test-"));
const helm = findHelm();
const chartSets = ["--set", "networking.podCIDR=10.244.0.0/16", "--set", "networking.serviceCIDR=10.96.0.0/12"];

/** The chart rendered as `liqo` in namespace liqo with chartSets and `sets`: helm's output, its documents, and its Deployments and DaemonSets. */
async function renderChart(...sets: string[]) {
  const rendered = await run([
    helm,
    "template",
    "liqo",
    join(repoRoot, "chart"),
    "--namespace",
    "liqo",
    ...chartSets,
    ...sets,
  ]);
  const docs = rendered.stdout
    .split(/^---$/m)
    // biome-ignore lint/suspicious/noExplicitAny: rendered YAML documents, walked by path
    .map((d) => Bun.YAML.parse(d) as any)
    .filter(Boolean);
  const workloads = docs.filter((d) => ["Deployment", "DaemonSet"].includes(d.kind));
  return { ...rendered, docs, workloads };
}

beforeAll(async () => {
  tree = await commandTree(main);
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const line = (n: CommandNode) => n.path.join(" ") || "(root)";

describe("help and flag validation of every command", () => {
  test("the tree holds every command the brief lists", () => {
    const paths = allCommands(tree).map((n) => n.path.join(" "));
    for (const p of [
      "version",
      "offload namespace",
      "unoffload namespace",
      "install kind",
      "install k3s",
      "install kubeadm",
      "install eks",
      "install gke",
      "install aks",
      "install openshift",
      "install generic",
      "uninstall",
      "completion",
      "docs",
      "plugin init",
      "plugin build",
      "plugin test",
      "plugin validate",
      "create virtualnode",
      "delete virtualnode",
    ]) {
      expect(paths).toContain(p);
    }
  });

  test("--help prints each command's usage, flags included, and exits 0", async () => {
    for (const n of allCommands(tree)) {
      const r = await liqoctl([...n.path, "--help"]);
      expect({ cmd: line(n), code: r.code }).toEqual({ cmd: line(n), code: 0 });
      for (const f of n.flags)
        expect({ cmd: line(n), hasFlag: r.stdout.includes(`--${f.name}`) }).toEqual({ cmd: line(n), hasFlag: true });
      for (const s of n.subCommands) expect(r.stdout).toContain(s.path.at(-1)!);
    }
  }, 300_000);

  test("an unknown flag is refused by every leaf command with exit code 2, naming the flag", async () => {
    for (const n of allCommands(tree).filter((c) => !c.subCommands.length)) {
      const args = n.args.filter((a) => a.required).map(() => "x");
      const r = await liqoctl([...n.path, ...args, "--no-such-flag"]);
      expect({ cmd: line(n), code: r.code, err: r.stderr.includes("unknown flag: --no-such-flag") }).toEqual({
        cmd: line(n),
        code: 2,
        err: true,
      });
    }
  }, 300_000);

  test("a missing positional argument is a usage error naming it", async () => {
    for (const n of allCommands(tree).filter((c) => c.args.some((a) => a.required))) {
      const r = await liqoctl(n.path);
      const missing = n.args.find((a) => a.required)!.name;
      expect({ cmd: line(n), code: r.code, named: r.stderr.toLowerCase().includes(missing.toLowerCase()) }).toEqual({
        cmd: line(n),
        code: 2,
        named: true,
      });
    }
  }, 120_000);

  test("a command group without its subcommand is a usage error", async () => {
    for (const g of ["offload", "unoffload", "plugin", "create", "delete"]) {
      const r = await liqoctl([g]);
      expect({ g, code: r.code }).toEqual({ g, code: 2 });
    }
  });

  test("install without a provider is install generic, as Liqo's (its flags checked, then the cluster)", async () => {
    const bad = await liqoctl(["install", "--pod-cidr", "10.244.0.1/16"]);
    expect(bad.stderr).toContain("--pod-cidr: 10.244.0.1/16 has host bits set");
    expect(bad.code).toBe(2);
    const r = await liqoctl(["--kubeconfig", join(tmp, "missing"), "upgrade"]);
    expect(r.stderr).toContain("does not exist");
    expect(r.code).toBe(3);
  });

  // Each wrong value is refused before any cluster is contacted (no kubeconfig is needed).
  const bad: [string[], string][] = [
    [
      ["offload", "namespace", "x", "--namespace-mapping-strategy", "Same"],
      "--namespace-mapping-strategy Same: use one of DefaultName, EnforceSameName",
    ],
    [["offload", "namespace", "x", "--pod-offloading-strategy", "Remotely"], "--pod-offloading-strategy Remotely"],
    [["offload", "namespace", "x", "--output", "xml"], "--output xml: use yaml or json"],
    [["offload", "namespace", "x", "--timeout", "soon"], "--timeout soon"],
    [["unoffload", "namespace", "x", "--timeout", "soon"], "--timeout soon"],
    [["version", "--output", "xml"], "--output xml: use text or json"],
    [["completion", "tcsh"], "shell tcsh is not supported: use one of bash, zsh, fish, powershell"],
    [["plugin", "test", "pods", "--input", "x.json", "--direction", "sideways"], "--direction sideways"],
    [["install", "kind", "--sharing-percentage", "101"], "--sharing-percentage 101: use a whole number from 0 to 100"],
    [
      ["install", "generic", "--pod-cidr", "10.244.0.1/16"],
      "--pod-cidr: 10.244.0.1/16 has host bits set; the network is 10.244.0.0/16",
    ],
    [["install", "generic", "--service-cidr", "10.96/12"], "--service-cidr: 10.96/12 is not an IPv4 CIDR"],
    [["install", "kind", "--reserved-subnets", "10.0.0.0/8,bogus"], "--reserved-subnets: bogus is not an IPv4 CIDR"],
    [["install", "kind", "--cluster-name", "Rome_1"], '--cluster-name: cluster name "Rome_1" is not a DNS-1123 label'],
    [["install", "kind", "--cluster-labels", "region"], '--cluster-labels: cluster label "region" is not key=value'],
    [
      ["install", "kind", "--api-server-url", "http://1.2.3.4:6443"],
      "--api-server-url http://1.2.3.4:6443: use the https:// URL",
    ],
    [["install", "kind", "--set", "noequals"], "--set noequals: expected key=value"],
    [["install", "kind", "--timeout", "forever"], "--timeout forever"],
    [["install", "kind", "--local-chart-path", "/nonexistent"], "--local-chart-path /nonexistent: no Chart.yaml there"],
    [["uninstall", "--timeout", "forever"], "--timeout forever"],
    [["create", "virtualnode", "x", "--remote-cluster-name", "milan"], "pass at least one of --cpu, --memory, --pods"],
    [
      ["create", "virtualnode", "x", "--remote-cluster-name", "milan", "--cpu", "1", "--timeout", "soon"],
      "--timeout soon",
    ],
    [["delete", "virtualnode", "X"], 'virtual node name "X" must be a DNS-1123 subdomain'],
    // Liqo's name and ours for one flag, with two values (cli/argv.ts).
    [
      ["move", "pvc", "data", "-n", "apps", "--node", "a", "--target-node", "b"],
      "--node and --target-node name the same flag (--node) and were given different values (a, b)",
    ],
  ];
  test.each(bad)("%p is refused with a message naming the fix", async (args, message) => {
    const r = await liqoctl(args, { env: { KUBECONFIG: "/nonexistent-kubeconfig" } });
    expect(r.stderr).toContain(message);
    expect(r.code).toBe(2);
  });

  test("a kubeconfig that does not exist is exit code 3 (unreachable), after the flags passed", async () => {
    const r = await liqoctl(["install", "generic", "--kubeconfig", join(tmp, "missing")]);
    expect(r.stderr).toContain("does not exist");
    expect(r.code).toBe(3);
  });
});

describe("version --client without citty", () => {
  test("the fast path takes exactly version --client with a valid --output, and answers as citty does", async () => {
    expect(clientVersionFastPath(["version", "--client"])).toBe("text");
    expect(clientVersionFastPath(["version", "-o", "json", "--client"])).toBe("json");
    expect(clientVersionFastPath(["version", "--client", "--output=json"])).toBe("json");
    for (const argv of [
      ["version"],
      ["version", "--client", "-o", "xml"],
      ["version", "--client", "--help"],
      ["version", "--client", "--bogus"],
      ["status", "--client"],
      ["version", "--client", "-o"],
    ]) {
      expect({ argv, fast: clientVersionFastPath(argv) }).toEqual({ argv, fast: undefined });
    }
    for (const o of ["text", "json"]) {
      const fast = await liqoctl(["version", "--client", "-o", o]);
      const citty = await liqoctl(["version", "--client", "-o", o, "--namespace", "liqo"]); // an extra flag: the citty path
      expect(fast).toEqual(citty);
      expect(fast.code).toBe(0);
    }
    expect((await liqoctl(["version", "--client", "-o", "xml"])).stderr).toContain("--output xml: use text or json");
  });
});

describe("completion", () => {
  test("the bash script loads in bash and completes commands, subcommands and flags", async () => {
    const script = (await liqoctl(["completion", "bash"])).stdout;
    await Bun.write(join(tmp, "liqoctl.bash"), script);
    const probe = (words: string[]) =>
      `COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _liqoctl; echo "\${COMPREPLY[*]}"`;
    const r = await run([
      "bash",
      "-c",
      [
        `source ${join(tmp, "liqoctl.bash")} && complete -p liqoctl && complete -p kubectl-liqo`,
        probe(["liqoctl", "un"]),
        probe(["liqoctl", "install", ""]),
        probe(["liqoctl", "install", "--namespace", "liqo", "ge"]),
        probe(["liqoctl", "offload", "namespace", "demo", "--pod-"]),
        probe(["liqoctl", "uninstall", "--p"]),
      ].join("\n"),
    ]);
    expect(r.stderr).toBe("");
    expect(r.stdout.split("\n")).toEqual([
      "complete -F _liqoctl liqoctl",
      "complete -F _liqoctl kubectl-liqo",
      tree.subCommands
        .map((s) => s.path[0]!)
        .filter((n) => n.startsWith("un"))
        .join(" "),
      "kind k3s kubeadm openshift eks gke aks generic --help",
      "generic",
      "--pod-offloading-strategy",
      "--purge",
      "",
    ]);
  });

  // A real zsh: compinit, the generated script (through bashcompinit), and zpty driving an
  // interactive shell that presses Tab; compadd is wrapped to print the matches zsh would offer,
  // and Tab is bound to the usual completion followed by a marker the driver waits for.
  const zshDriver = `zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z "PS1='> '; autoload -U compinit && compinit -u -D && source \${(q)1}"
zpty -w z 'compadd() { if [[ " $* " == *" -"[AOD]" "* ]]; then builtin compadd "$@"; return; fi; local -a h; builtin compadd -A h "$@"; (( $#h )) && print -rl -- \${h/#/MATCH:}; builtin compadd "$@"; }'
zpty -w z 'tab-then-mark() { zle expand-or-complete; print -n COMPLETION-DONE; }; zle -N tab-then-mark; bindkey "^I" tab-then-mark'
zpty -w z 'print SETUP-DONE'
zpty -r z out '*SETUP-DONE*SETUP-DONE*' || exit 3
shift; integer n=0
for line in "$@"; do
  # Nothing more is typed until Tab's completion has finished: keys typed ahead of it can cut it short.
  (( n++ )); zpty -w -n z "$line"$'\\t'; zpty -r z out '*COMPLETION-DONE*'
  zpty -w -n z $'\\C-u'; zpty -w z "print PROBE-END-$n"; zpty -r z rest "*PROBE-END-$n*PROBE-END-$n*"
  print -r -- "PROBE $n"; print -rl -- \${(M)\${(f)out//$'\\r'/}:#*MATCH:*} | sed 's/.*MATCH://' | sort -u
done
zpty -d z
`;

  async function zshComplete(script: string, lines: string[]): Promise<string[][]> {
    await Bun.write(join(tmp, "zsh-driver.zsh"), zshDriver);
    const r = await run(["timeout", "60", "zsh", "-f", join(tmp, "zsh-driver.zsh"), script, ...lines]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    return r.stdout
      .split(/^PROBE \d+\n/m)
      .slice(1)
      .map((block) => block.split("\n").filter(Boolean));
  }

  test("the zsh script loads in a real zsh (compinit) and Tab completes commands, subcommands and flags", async () => {
    const path = join(tmp, "_liqoctl");
    await Bun.write(path, (await liqoctl(["completion", "zsh"])).stdout);
    const got = await zshComplete(path, [
      "liqoctl un",
      "liqoctl install ",
      "kubectl-liqo offload namespace demo --pod-",
      "liqoctl uninstall --p",
      "liqoctl nosuch",
    ]);
    expect(got).toEqual([
      ["uncordon", "uninstall", "unoffload", "unpeer"],
      ["--help", "aks", "eks", "generic", "gke", "k3s", "kind", "kubeadm", "openshift"],
      ["--pod-offloading-strategy"],
      ["--purge"],
      [],
    ]);
  }, 90_000);

  test("the harness sees nothing without the script (it can fail)", async () => {
    const path = join(tmp, "_empty");
    await Bun.write(path, "# no completion\n");
    expect(await zshComplete(path, ["liqoctl un"])).toEqual([[]]);
  }, 90_000);

  test("the fish script loads in a real fish and complete -C offers subcommands, flags and no files for plain values", async () => {
    const path = join(tmp, "liqoctl.fish");
    await Bun.write(path, (await liqoctl(["completion", "fish"])).stdout);
    const probes = [
      "liqoctl off",
      "liqoctl install ",
      "liqoctl offload namespace demo --pod-",
      "kubectl-liqo uninstall --p",
      "liqoctl offload namespace demo --pod-offloading-strategy ",
    ];
    const r = await run(
      [
        "fish",
        "--no-config",
        "-c",
        [`source ${path}`, ...probes.map((p, i) => `echo PROBE ${i}; complete -C '${p}'`)].join("; "),
      ],
      { env: { HOME: tmp } },
    );
    expect(r.stderr).toBe("");
    const blocks = r.stdout
      .split(/^PROBE \d+\n/m)
      .slice(1)
      .map((b) =>
        b
          .split("\n")
          .filter(Boolean)
          .map((l) => l.split("\t")[0]),
      );
    expect(blocks).toEqual([
      ["offload"],
      ["aks", "eks", "generic", "gke", "k3s", "kind", "kubeadm", "openshift"],
      ["--pod-offloading-strategy"],
      ["--purge"],
      [],
    ]);
    const kube = await run([
      "fish",
      "--no-config",
      "-c",
      `source ${path}; complete -C 'liqoctl status --kubeconfig ${join(repoRoot, "packa")}'`,
    ]);
    expect(kube.stdout).toContain("package.json");
  });

  // PowerShell is not installable here (no Microsoft package repository): its script is checked
  // only structurally, quotes and brackets balanced and every command path in the table.
  test("the powershell script covers every command and its quotes and brackets balance", async () => {
    const r = await liqoctl(["completion", "powershell"]);
    expect(r.code).toBe(0);
    for (const n of allCommands(tree).filter((c) => c.path.length))
      expect(r.stdout).toContain(`'/${n.path.join("/")}' = @(`);
    const code = r.stdout
      .replace(/'(?:[^']|'')*'/g, "''")
      .replace(/"(?:[^"`]|`.)*"/g, '""')
      .replace(/#.*$/gm, "");
    const stack: string[] = [];
    for (const ch of code) {
      if ("{([".includes(ch)) stack.push(ch);
      else if ("})]".includes(ch))
        expect({ ch, open: stack.pop() }).toEqual({ ch, open: { "}": "{", ")": "(", "]": "[" }[ch] });
    }
    expect(stack).toEqual([]);
    expect(code.replace(/''|""/g, "")).not.toMatch(/['"]/); // no string left open
  });
});

describe("docs", () => {
  test("docs --dir writes one page per command, each listing all its flags", async () => {
    const dir = join(tmp, "docs");
    const r = await liqoctl(["docs", "--dir", dir]);
    expect(r.code).toBe(0);
    const files = readdirSync(dir).sort();
    expect(files).toEqual(
      allCommands(tree)
        .map((n) => docFileName(tree, n))
        .sort(),
    );
    for (const n of allCommands(tree)) {
      const page = readFileSync(join(dir, docFileName(tree, n)), "utf8");
      expect(page).toStartWith(`# ${["liqoctl", ...n.path].join(" ")}\n`);
      for (const f of n.flags)
        expect({ page: docFileName(tree, n), flag: page.includes(`\`--${f.name}\``) }).toEqual({
          page: docFileName(tree, n),
          flag: true,
        });
    }
  });

  test("docs --dir into a file path fails with exit 1 naming the directory", async () => {
    await Bun.write(join(tmp, "a-file"), "x");
    const r = await liqoctl(["docs", "--dir", join(tmp, "a-file")]);
    expect(r.stderr).toContain(`--dir ${join(tmp, "a-file")}: cannot write there`);
    expect(r.code).toBe(1);
  });
});

describe("chart", () => {
  test("chart/crds matches core/apis (regenerate with bun run chart:crds)", async () => {
    expect(await staleCrdFiles()).toEqual([]);
  });

  test("helm lint is clean", async () => {
    const r = await run([helm, "lint", join(repoRoot, "chart"), "--strict", ...chartSets]);
    expect(r.stdout).toContain("1 chart(s) linted, 0 chart(s) failed");
    expect(r.code).toBe(0);
  });

  test("the values schema refuses unknown keys, bad enums and out-of-range numbers", async () => {
    for (const [set, key] of [
      ["sharingPercentage=200", "/sharingPercentage"],
      ["auth.service.type=Ingress", "/auth/service/type"],
      ["gatewy.replicas=2", "gatewy"],
      ["networking.podCIDR=10.0.0.0", "/networking/podCIDR"],
      // A security mode typo (Liqo's names only).
      ["networking.securityMode=FullPod", "/networking/securityMode"],
      // A reflection policy for a kind that has none, or a mode that does not exist.
      ["reflection.policy.pods=none", "/reflection/policy"],
      ["reflection.policy.secrets=some", "/reflection/policy/secrets"],
      // Service continuity's threshold that is not a duration.
      ["controllerManager.serviceContinuityThreshold=soon", "/controllerManager/serviceContinuityThreshold"],
    ]) {
      const r = await run([helm, "template", join(repoRoot, "chart"), ...chartSets, "--set", set!]);
      expect({ set, code: r.code, named: r.stderr.includes(key!) }).toEqual({ set, code: 1, named: true });
    }
  });

  test("networking.securityMode reaches the gateway's flags (a changed pod template: helm upgrade rolls it) and its RBAC", async () => {
    const gatewayOf = async (mode?: string) => {
      const { code, docs, workloads } = await renderChart(
        ...(mode ? ["--set", `networking.securityMode=${mode}`] : []),
      );
      const args: string[] = workloads.find((w) => w.metadata.name === "liqo-gateway")!.spec.template.spec.containers[0]
        .args;
      const role = docs.find((d) => d.kind === "ClusterRole" && d.metadata.name === "liqo-gateway");
      // biome-ignore lint/suspicious/noExplicitAny: rendered RBAC rules
      const resources = (role.rules as any[]).flatMap((r) => r.resources as string[]);
      return {
        code,
        mode: args[args.indexOf("--security-mode") + 1],
        reads: ["pods", "endpointslices", "namespacemaps"].filter((r) => resources.includes(r)),
      };
    };
    expect(await gatewayOf()).toEqual({ code: 0, mode: "FullPodToPod", reads: [] });
    expect(await gatewayOf("IntraClusterTrafficSegregation")).toEqual({
      code: 0,
      mode: "IntraClusterTrafficSegregation",
      reads: ["pods", "endpointslices", "namespacemaps"],
    });
  });

  test("every container's arguments are flags its `liqo <role>` accepts, required ones included", async () => {
    const { workloads } = await renderChart("--set", "gateway.endpoint=203.0.113.7:30871");
    expect(workloads.map((w) => w.metadata.name).sort()).toEqual([
      "liqo-auth",
      "liqo-controller-manager",
      "liqo-gateway",
      "liqo-network-manager",
      "liqo-route",
      "liqo-webhook",
    ]);
    const roles = await commandTree(liqo);
    for (const w of workloads) {
      const args: string[] = w.spec.template.spec.containers[0].args;
      const role = roles.subCommands.find((r) => r.path[0] === args[0]);
      expect({ workload: w.metadata.name, role: role?.name }).toEqual({ workload: w.metadata.name, role: args[0] });
      // biome-ignore lint/suspicious/noExplicitAny: rendered YAML documents and lazily loaded commands, walked by path
      const roleDef = await (liqo.subCommands as Record<string, () => Promise<any>>)[args[0]!]!();
      expect({ workload: w.metadata.name, unknown: await unknownFlags(roleDef, args.slice(1)) }).toEqual({
        workload: w.metadata.name,
        unknown: [],
      });
      const missing = role!.flags.filter((f) => f.required && !args.includes(`--${f.name}`)).map((f) => f.name);
      expect({ workload: w.metadata.name, missing }).toEqual({ workload: w.metadata.name, missing: [] });
    }
  });

  test("workloads carry Liqo's labels where they do not clash, selectors unchanged; --cluster-labels as Liqo's", async () => {
    const { code, workloads } = await renderChart(
      ...["--set", "clusterLabels.region=eu", "--set", "clusterLabels.provider=onprem"],
      ...["--set", "discovery.config.enableDiscovery=true", "--set", "proxy.enabled=true"],
    );
    expect(code).toBe(0);
    expect(workloads.length).toBeGreaterThanOrEqual(6);
    for (const w of workloads) {
      const role = (w.metadata.name as string).replace(/^liqo-/, "");
      // The selector is immutable: it stays what earlier versions of the chart rendered.
      expect({ w: w.metadata.name, selector: w.spec.selector.matchLabels }).toEqual({
        w: w.metadata.name,
        selector: { "app.kubernetes.io/name": `liqo-${role}`, "app.kubernetes.io/instance": "liqo" },
      });
      expect({ w: w.metadata.name, labels: w.metadata.labels }).toMatchObject({
        w: w.metadata.name,
        labels: {
          "app.kubernetes.io/name": role,
          "app.kubernetes.io/component": role,
          "app.kubernetes.io/part-of": "liqo",
          "app.kubernetes.io/instance": "liqo",
        },
      });
      expect({ w: w.metadata.name, pod: w.spec.template.metadata.labels }).toMatchObject({
        w: w.metadata.name,
        pod: {
          ...w.spec.selector.matchLabels,
          "app.kubernetes.io/component": role,
          "app.kubernetes.io/part-of": "liqo",
        },
      });
    }
    const cm = workloads.find((w) => w.metadata.name === "liqo-controller-manager");
    expect(cm.spec.template.spec.containers[0].args).toContain("--cluster-labels=provider=onprem,region=eu");
  });

  test("discovery.config on: liqo-discovery runs the discovery controllers with hostNetwork, with flags its role accepts; off by default", async () => {
    const sets = [
      "discovery.config.enableAdvertisement=true",
      "discovery.config.enableDiscovery=true",
      "discovery.config.enableWanDiscovery=true",
      "discovery.config.autojoin=false",
      "discovery.config.ttl=30",
      "discovery.config.dnsServer=10.96.0.10:53",
    ].flatMap((x) => ["--set", x]);
    const { docs } = await renderChart(...sets);
    const d = docs.find((x) => x.kind === "Deployment" && x.metadata.name === "liqo-discovery");
    expect(d.spec.template.spec.hostNetwork).toBe(true);
    expect(d.spec.template.spec.serviceAccountName).toBe("liqo-discovery");
    const args: string[] = d.spec.template.spec.containers[0].args;
    expect(args.slice(0, 3)).toEqual(["controller-manager", "--controllers", "discovery,searchdomain"]);
    expect(args).toContain("--discovery-autojoin=false");
    expect(args.slice(args.indexOf("--dns-server"), args.indexOf("--dns-server") + 2)).toEqual([
      "--dns-server",
      "10.96.0.10:53",
    ]);
    // biome-ignore lint/suspicious/noExplicitAny: rendered YAML documents and lazily loaded commands, walked by path
    const roleDef = await (liqo.subCommands as Record<string, () => Promise<any>>)["controller-manager"]!();
    expect(await unknownFlags(roleDef, args.slice(1))).toEqual([]);
    expect(docs.some((x) => x.kind === "ClusterRole" && x.metadata.name === "liqo-discovery")).toBe(true);
    const off = await renderChart();
    expect(off.stdout).not.toContain("liqo-discovery");
  });

  test("roles.runInCluster=false: Deployments at zero, no route DaemonSet, the webhook called at roles.external.webhookUrl with 127.0.0.1 in the certificates", async () => {
    const rendered = await renderChart(
      ...["--set", "roles.runInCluster=false", "--set", "roles.external.webhookUrl=https://127.0.0.1:9443"],
      ...["--set", "roles.external.ips={127.0.0.1}"],
    );
    expect(rendered.stderr).toBe("");
    const { docs } = rendered;
    const replicas = docs.filter((d) => d.kind === "Deployment").map((d) => [d.metadata.name, d.spec.replicas]);
    expect(replicas.sort()).toEqual(
      ["liqo-auth", "liqo-controller-manager", "liqo-gateway", "liqo-network-manager", "liqo-webhook"].map((n) => [
        n,
        0,
      ]),
    );
    expect(docs.filter((d) => d.kind === "DaemonSet")).toEqual([]);
    expect(docs.filter((d) => d.kind === "ServiceAccount").length).toBe(6);
    const webhook = docs.find((d) => d.kind === "MutatingWebhookConfiguration");
    expect(webhook.webhooks[0].clientConfig.url).toBe("https://127.0.0.1:9443/mutate/pods");
    expect(webhook.webhooks[0].clientConfig.service).toBeUndefined();
    const secret = docs.find((d) => d.kind === "Secret" && d.metadata.name === "liqo-webhook-tls");
    const text = (
      await run(["openssl", "x509", "-noout", "-ext", "subjectAltName"], {
        stdin: Buffer.from(secret.data["tls.crt"], "base64").toString(),
      })
    ).stdout;
    expect(text).toContain("IP Address:127.0.0.1");
  });

  test("roles.external values are checked: a URL without https, a host name as IP, a webhook URL for in-cluster roles", async () => {
    for (const [set, message] of [
      ["roles.external.webhookUrl=http://127.0.0.1:9443", "/roles/external/webhookUrl"],
      ["roles.external.ips={localhost}", "/roles/external/ips/0"],
      [
        "roles.external.webhookUrl=https://127.0.0.1:9443",
        "roles.external.webhookUrl is for a webhook run outside the cluster: set roles.runInCluster=false too",
      ],
    ]) {
      const r = await run([helm, "template", join(repoRoot, "chart"), ...chartSets, "--set", set!]);
      expect({ set, code: r.code, named: r.stderr.includes(message!) }).toEqual({ set, code: 1, named: true });
    }
  });

  test("route.vtepDevice: empty by default (the agent detects it), passed when set", async () => {
    const routeArgs = async (...sets: string[]) => {
      const r = await run([helm, "template", "liqo", join(repoRoot, "chart"), ...chartSets, ...sets]);
      const ds = r.stdout
        .split(/^---$/m)
        // biome-ignore lint/suspicious/noExplicitAny: rendered YAML documents and lazily loaded commands, walked by path
        .map((d) => Bun.YAML.parse(d) as any)
        .find((d) => d?.kind === "DaemonSet" && d.metadata.name === "liqo-route");
      return ds.spec.template.spec.containers[0].args as string[];
    };
    expect(await routeArgs()).not.toContain("--vtep-device");
    const set = await routeArgs("--set", "route.vtepDevice=ens5");
    expect(set.slice(set.indexOf("--vtep-device"), set.indexOf("--vtep-device") + 2)).toEqual([
      "--vtep-device",
      "ens5",
    ]);
  });

  test("every role is probed over httpGet on its own port named health; metrics.enabled adds an HTTPS port named metrics, its certificate and the scraper identity", async () => {
    const off = await renderChart("--set", "proxy.enabled=true", "--set", "discovery.config.enableDiscovery=true");
    expect(off.code).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: rendered YAML documents, walked by path
    const portsOf = (w: any) => w.spec.template.spec.containers[0].ports.map((p: { name: string }) => p.name);
    for (const w of off.workloads) {
      const c = w.spec.template.spec.containers[0];
      // A template's own ports: key after liqo.container would replace the health port (YAML keeps the last key).
      expect({
        workload: w.metadata.name,
        health: portsOf(w).includes("health"),
        metrics: portsOf(w).includes("metrics"),
      }).toEqual({
        workload: w.metadata.name,
        health: true,
        metrics: false,
      });
      expect(c.readinessProbe.httpGet.port).toBe("health");
      expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "health" });
      expect(c.args.slice(c.args.indexOf("--health-address"), c.args.indexOf("--health-address") + 2)[1]).toMatch(
        /^\[\$\(POD_IP\)\]:\d+$/,
      );
    }
    expect(off.docs.some((d) => d.metadata?.name === "liqo-metrics-tls")).toBe(false);

    const on = await renderChart("--set", "proxy.enabled=true", "--set", "metrics.enabled=true");
    for (const w of on.workloads) {
      const c = w.spec.template.spec.containers[0];
      expect({ workload: w.metadata.name, metrics: portsOf(w).includes("metrics") }).toEqual({
        workload: w.metadata.name,
        metrics: true,
      });
      expect(c.args).toContain("--metrics-tls-cert-file");
      expect(c.volumeMounts.map((m: { name: string }) => m.name)).toContain("metrics-tls");
      expect(w.spec.template.spec.volumes.map((v: { name: string }) => v.name)).toContain("metrics-tls");
    }
    // Every liqo pod's ServiceAccount may ask the API server about scrapers, the proxy's included.
    const delegated = on.docs.find((d) => d.metadata?.name === "liqo-metrics-auth-delegator");
    const accounts = new Set(on.workloads.map((w) => w.spec.template.spec.serviceAccountName));
    expect(new Set(delegated.subjects.map((s: { name: string }) => s.name))).toEqual(accounts);
    const names = on.docs.map((d) => `${d.kind}/${d.metadata?.name}`);
    for (const want of [
      "Secret/liqo-metrics-tls",
      "ServiceAccount/liqo-metrics-scraper",
      "Secret/liqo-metrics-scraper",
      "ClusterRole/liqo-metrics-reader",
      "ClusterRoleBinding/liqo-metrics-scraper",
      "ClusterRoleBinding/liqo-metrics-auth-delegator",
    ])
      expect(names).toContain(want);
    expect(names.some((n) => n.startsWith("PodMonitor/"))).toBe(false);
    const monitored = await renderChart(
      "--set",
      "metrics.enabled=true",
      "--set",
      "metrics.prometheusOperator.enabled=true",
    );
    expect(monitored.docs.find((d) => d.kind === "PodMonitor")?.spec.podMetricsEndpoints[0]).toMatchObject({
      port: "metrics",
      scheme: "https",
      tlsConfig: { serverName: "liqo-metrics.liqo.svc" },
    });
    const alone = await renderChart("--set", "metrics.prometheusOperator.enabled=true");
    expect(alone.code).toBe(1);
    expect(alone.stderr).toContain("metrics.prometheusOperator.enabled needs metrics.enabled=true");
  });

  test("a missing pod CIDR fails rendering with the flag to pass", async () => {
    const r = await run([helm, "template", join(repoRoot, "chart")]);
    expect(r.stderr).toContain("networking.podCIDR is required: pass --pod-cidr to liqoctl install");
    expect(r.code).toBe(1);
  });
});

describe("against a rig cluster", () => {
  let rig: TestRig;
  let client: KubeClient;
  let kubeconfig: string;
  let binary: string;
  let kubectl: string;

  beforeAll(async () => {
    [rig, binary] = await Promise.all([
      startTestRig({ clusters: 1, names: ["rome"], nodes: 1 }),
      buildLiqoctl(hostTarget(), join(tmp, "dist")),
    ]);
    linkKubectlPlugin(binary, join(tmp, "dist"));
    client = rig.client("rome");
    kubeconfig = rig.clusters[0]!.kubeconfig;
    kubectl = join(helm, "../kubectl");
    await installCrds(client, { timeoutMs: 120_000 });
    // Established is not yet served: the API server answers 429 while a new CRD's storage initializes.
    await waitFor("ForeignClusters listable", () => client.list(ForeignClusterResource).then(() => true), {
      timeoutMs: 60_000,
    });
    await client.create(Resources.namespaces, { metadata: { name: "liqo" } });
  }, 600_000);
  afterAll(async () => {
    await rig?.down();
  });

  test("the compiled binary reports client and server versions (not installed yet)", async () => {
    const r = await liqoctl(["version", "--kubeconfig", kubeconfig], { program: [binary] });
    // The build compiles in the checkout's commit ("-dirty" with uncommitted changes).
    const v = checkoutVersion().replace(/\./g, "\\.");
    expect(r.stdout).toMatch(
      new RegExp(
        `^Client version: ${v} \\(commit [0-9a-f]{40}(-dirty)?, bun 1\\.4\\.5, linux/x64\\)\nServer version: not installed \\(no liqo in namespace liqo; liqoctl install --help\\)\n$`,
      ),
    );
    expect(r.code).toBe(0);
  });

  test("the compiled binary runs status: refused before liqo is there, the identity once it is", async () => {
    const before = await liqoctl(["status", "--kubeconfig", kubeconfig], { program: [binary] });
    expect(before.stderr).toContain("liqo is not installed here: no ConfigMap liqo/liqo-clusterid-configmap");
    expect(before.code).toBe(1);
    await client.create(Resources.configMaps, {
      metadata: { name: "liqo-clusterid-configmap", namespace: "liqo" },
      data: { CLUSTER_ID: "0d4f6b1e-0000-4000-8000-000000000001", CLUSTER_NAME: "rome" },
    });
    try {
      const after = await liqoctl(["status", "--kubeconfig", kubeconfig], { program: [binary] });
      expect(after.stderr).toBe("");
      expect(after.stdout).toContain("  name:      rome\n  ID:        0d4f6b1e-0000-4000-8000-000000000001\n");
      expect(after.code).toBe(0);
      // The same facts for scripts: -o json names the cluster the text does; an unknown format is refused.
      const json = await liqoctl(["status", "-o", "json", "--kubeconfig", kubeconfig], { program: [binary] });
      expect(JSON.parse(json.stdout).clusterIdentity.name).toBe("rome");
      expect(json.code).toBe(0);
      const xml = await liqoctl(["status", "-o", "xml", "--kubeconfig", kubeconfig], { program: [binary] });
      expect(xml.stderr).toContain("--output xml: use json or yaml");
      expect(xml.code).toBe(2);
      expect(after.stdout).toContain("Installation: no liqo Deployment in namespace liqo (liqoctl install --help)");
      // liqoctl info (Liqo 1.x's name): one field for a script, and what a wrong path or peer gets.
      const info = (...a: string[]) => liqoctl(["info", ...a, "--kubeconfig", kubeconfig], { program: [binary] });
      expect((await info("--get", "clusterIdentity.name")).stdout).toBe("rome\n");
      expect(JSON.parse((await info("--get", "installation")).stdout)).toEqual({
        namespace: "liqo",
        version: null,
        healthy: true,
        components: [],
      });
      const wrong = await info("--get", "clusterIdentity.nme");
      expect(wrong.stderr).toContain(
        '--get clusterIdentity.nme: clusterIdentity has no field "nme"; its fields: name, id, labels, authUrl',
      );
      expect(wrong.code).toBe(2);
      const nobody = await info("peer", "milan");
      expect(nobody.stderr).toContain("no peering milan; peerings here: none");
      expect(nobody.code).toBe(2);
      const version = await liqoctl(["version", "--kubeconfig", kubeconfig], { program: [binary] });
      expect(version.stdout).toContain(
        "Server version: unknown (no liqo Deployment carries app.kubernetes.io/version) (cluster rome, id 0d4f6b1e-0000-4000-8000-000000000001)",
      );
    } finally {
      await client.delete(Resources.configMaps, "liqo-clusterid-configmap", "liqo");
    }
  });

  test("the compiled binary validates an embedded built-in plugin and names itself as a kubectl plugin", async () => {
    const v = await liqoctl(["plugin", "validate", "pods"], { program: [binary] });
    expect(v.stdout).toBe("pods: pods 1.0.0, ABI v1, reflects Pod (both)\n");
    const help = await liqoctl(["--help"], { program: [join(tmp, "dist/kubectl-liqo")] });
    expect(help.stdout).toContain("kubectl liqo version|");
  });

  test("the compiled binary's plugin init writes a project with its embedded SDK (no checkout needed)", async () => {
    const dir = join(tmp, "pdbs");
    const r = await liqoctl(["plugin", "init", "pdbs", "--dir", dir], { program: [binary] });
    expect(r.stdout).toContain("plugin pdbs for policy/v1 PodDisruptionBudget, SDK 0.1.0 in vendor/plugin-sdk.");
    expect(r.code).toBe(0);
    const sdk = join(dir, "vendor/plugin-sdk");
    expect((await Bun.file(join(sdk, "package.json")).json()).name).toBe("@liqo-bun/plugin-sdk");
    for (const f of ["asconfig.json", "index.ts", "exports.ts", "assembly/runtime/arena.ts", "worker.ts"])
      expect(await Bun.file(join(sdk, f)).exists()).toBe(true);
    expect(await Bun.file(join(sdk, "testing.js")).text()).toContain("function testReflectorPlugin(");
  });

  test("offload namespace --output yaml from the binary passes a server-side dry run", async () => {
    await client.create(Resources.namespaces, { metadata: { name: "liqo-demo" } });
    const out = await liqoctl(
      [
        "offload",
        "namespace",
        "liqo-demo",
        "--pod-offloading-strategy",
        "Remote",
        "--selector",
        "region in (eu)",
        "--output",
        "yaml",
      ],
      { program: [binary] },
    );
    expect(out.code).toBe(0);
    const r = await run([kubectl, "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-"], {
      stdin: out.stdout,
    });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("namespaceoffloading.offloading.liqo.io/offloading created (server dry run)\n");
  });

  test("the rendered chart passes a server-side dry run once the CRDs are installed", async () => {
    const rendered = await renderChart(
      "--set",
      "auth.ingress.enabled=true",
      "--set",
      "auth.ingress.host=auth.rome.example",
    );
    expect(rendered.stderr).toBe("");
    // The chart makes the storage namespace (Helm creates Namespaces first); a dry run persists
    // nothing, so the objects inside it need it to exist already.
    expect(rendered.stdout).toContain("kind: Namespace");
    await client.create(Resources.namespaces, {
      metadata: {
        name: "liqo-storage",
        // Owned by the release, so the install test after this one adopts it.
        labels: { "app.kubernetes.io/managed-by": "Helm" },
        annotations: { "meta.helm.sh/release-name": "liqo", "meta.helm.sh/release-namespace": "liqo" },
      },
    });
    const r = await run([kubectl, "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-"], {
      stdin: rendered.stdout,
    });
    // kubectl's note that the namespace made above was not made by apply is no error.
    expect(r.stderr.replace(/^Warning: resource namespaces\/liqo-storage is missing the .*\n/m, "")).toBe("");
    const kinds = r.stdout
      .trim()
      .split("\n")
      .map((l) => l.split("/")[0]);
    for (const k of [
      "deployment.apps",
      "daemonset.apps",
      "service",
      "ingress.networking.k8s.io",
      "mutatingwebhookconfiguration.admissionregistration.k8s.io",
      "clusterrole.rbac.authorization.k8s.io",
      "role.rbac.authorization.k8s.io",
      "secret",
      "configmap",
      "serviceaccount",
    ]) {
      expect(kinds).toContain(k);
    }
    expect(
      r.stdout
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("deployment.apps/"))
        .sort(),
    ).toEqual(
      ["auth", "controller-manager", "gateway", "network-manager", "webhook"].map(
        (c) => `deployment.apps/liqo-${c} created (server dry run)`,
      ),
    );
  });

  test("the compiled binary installs its embedded chart (no checkout needed)", async () => {
    const r = await liqoctl(
      [
        "install",
        "generic",
        "--kubeconfig",
        kubeconfig,
        "--pod-cidr",
        rig.clusters[0]!.podCIDR,
        "--cluster-name",
        "rome",
        "--timeout",
        "8m",
      ],
      { program: [binary], cwd: tmp },
    );
    expect(r.stderr).toContain("liqo installed in namespace liqo (cluster rome)");
    expect(r.code).toBe(0);
    // The namespace existed unlabelled: liqoctl labels it for the privileged gateway and host-network route agent.
    expect(r.stderr).toContain("namespace liqo labelled pod-security.kubernetes.io/enforce=privileged");
    const ns = await client.get(Resources.namespaces, "liqo");
    expect(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("privileged");
    const version = await liqoctl(["version", "--kubeconfig", kubeconfig], { program: [binary] });
    expect(version.stdout).toContain(`Server version: ${checkoutVersion()} (cluster rome, id `);
  }, 600_000);
});
