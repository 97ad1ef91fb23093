// The docs against the code: every liqoctl / liqo command line the docs show names commands and
// flags that exist, and the committed liqoctl reference (docs/reference) is current.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { markdownDocs } from "./docs.ts";
import { brokenLinks, commandProblems, docCommands, referenceDrift, shellCommands } from "./docs-check.ts";
import { liqo } from "./liqo.ts";
import { main } from "./main.ts";
import { commandTree } from "./tree.ts";

const repo = resolve(import.meta.dir, "..");
const REFERENCE = "docs/reference";
const roots = { liqoctl: main, liqo };
const roles = new Set(Object.keys((liqo.subCommands as Record<string, unknown> | undefined) ?? {}));

/** README.md and the pages in docs/ (the generated reference is checked against the generator below). */
function docFiles(): string[] {
  const pages = readdirSync(join(repo, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);
  return ["README.md", ...pages];
}

describe("command lines in the docs", () => {
  // Loads every command of both trees: seconds on a busy machine.
  test("every liqoctl and liqo command line in README.md and docs/*.md names commands and flags that exist", async () => {
    const found = docFiles().flatMap((f) => docCommands(f, readFileSync(join(repo, f), "utf8"), roles));
    // The docs show well over a hundred; far fewer means the extraction broke, not that the docs are right.
    expect(found.filter((c) => c.tree === "liqoctl").length).toBeGreaterThan(60);
    expect(found.filter((c) => c.tree === "liqo").length).toBeGreaterThan(10);
    const wrong: string[] = [];
    for (const c of found)
      for (const p of await commandProblems(roots[c.tree], c.words))
        wrong.push(`${c.file}:${c.line}: ${p}\n    ${c.text.trim()}`);
    expect(wrong, `fix the docs (or the command, if the doc is right):\n${wrong.join("\n")}`).toEqual([]);
  }, 60_000);

  test("a made-up flag, a flag of another command and a command that does not exist are reported", async () => {
    expect(await commandProblems(main, ["peer", "out-of-band", "milan", "--made-up-flag"])).toEqual([
      "peer out-of-band has no flag --made-up-flag",
    ]);
    // --networking belongs to peer out-of-band, not to peer <name>.
    expect(await commandProblems(main, ["peer", "milan", "--networking"])).toEqual([
      "peer milan has no flag --networking",
    ]);
    expect(await commandProblems(main, ["offlaod", "namespace", "demo"])).toEqual([
      expect.stringContaining("offlaod is not a command"),
    ]);
    expect(await commandProblems(main, ["unoffload", "namespace", "a", "b"])).toEqual([
      "unoffload namespace takes 1 argument, the line gives 2 (a b)",
    ]);
    expect(await commandProblems(main, ["--made-up", "status"])).toEqual(["status has no flag --made-up"]);
    expect(await commandProblems(liqo, ["gateway", "--no-such-flag=1"])).toEqual([
      "gateway has no flag --no-such-flag",
    ]);
    // A placeholder for the provider stands for the default one, whose flags are still checked.
    expect(await commandProblems(main, ["install", "<provider>", "--pod-cidr", "x", "--made-up"])).toEqual([
      "install generic has no flag --made-up",
    ]);
  }, 30_000);

  test("aliases, leading flags, the default provider, synopses and --help are accepted as the CLI accepts them", async () => {
    const ok = [
      ["peer", "oob", "milan", "--auth-url", "https://x", "--cluster-id", "id", "--auth-token", "t", "--no-networking"],
      ["peer", "out-of-band", "<name>", "--auth-url", "--cluster-id", "--auth-token"],
      ["move", "pvc", "data", "--target-node", "n1", "-n", "shop"],
      ["--context=provider", "peer", "consumer"],
      ["install", "--api-server-url=https://x:6443", "--pod-cidr=10.0.0.0/16"],
      ["upgrade", "kind", "--cluster-name", "rome"],
      ["offload", "ns", "demo", "-l", "a=b"],
      ["test", "net", "--basic"],
      ["install", "kind", "--help"],
      ["generate"],
      ["install", "<provider>", "--enable-metrics"],
      ["install", "generic", "$RULES", "--set", "a=b"],
    ];
    expect(await commandProblems(liqo, ["<role>", "--anything"])).toEqual([]);
    for (const words of ok)
      expect({ words, problems: await commandProblems(main, words) }).toEqual({ words, problems: [] });
  }, 30_000);

  test("command lines are read from shell blocks, prompted lines of other blocks and inline code, not from output", () => {
    const md = [
      "Run `liqoctl peer milan --cpu 2` or `bun run liqoctl status`; not `kubectl get pods`.",
      "```sh",
      "liqoctl install kind --cluster-name rome   # a comment --not-a-flag",
      "bun run liqoctl install generic --kubeconfig k \\",
      "  --pod-cidr 10.0.0.0/16",
      "source <(liqoctl completion bash) && dist/liqoctl-linux-x64 version | head -1",
      "```",
      "```text",
      "$ liqoctl test network [cluster] [--basic] [--timeout 5m] [--image <a liqo image>] ...",
      "liqoctl peer paris (an output line, not run)",
      "ERROR ...: liqoctl peer paris",
      "```",
      "```yaml",
      "command: liqoctl status",
      "```",
      "```console",
      "$ bun run liqo gateway --lease-duration 15s",
      "```",
    ].join("\n");
    const found = docCommands("x.md", md, roles).map((c) => [c.line, c.tree, c.words.join(" ")]);
    expect(found).toEqual([
      [1, "liqoctl", "peer milan --cpu 2"],
      [1, "liqoctl", "status"],
      [3, "liqoctl", "install kind --cluster-name rome"],
      [4, "liqoctl", "install generic --kubeconfig k --pod-cidr 10.0.0.0/16"],
      [6, "liqoctl", "completion bash"],
      [6, "liqoctl", "version"],
      [9, "liqoctl", "test network cluster --basic --timeout 5m --image <a liqo image>"],
      [17, "liqo", "gateway --lease-duration 15s"],
    ]);
    // A bracketed phrase in a synopsis is prose; a bracketed flag is checked.
    const shell = docCommands(
      "y.md",
      "```sh\nliqo proxy --listen :8118 [admin flags, default :8095] [--verbose]\n```\nnot a command: `liqo is not installed here`",
      roles,
    );
    expect(shell.map((c) => c.words.join(" "))).toEqual(["proxy --listen :8118 --verbose"]);
    expect(shellCommands(`liqoctl x --set 'a={1,2}' "b c" | grep y`)).toEqual([
      ["liqoctl", "x", "--set", "a={1,2}", "b c"],
      ["grep", "y"],
    ]);
  });
});

describe("links in the docs", () => {
  test("every relative link in README.md and docs/*.md leads to a file of the repository, and its #anchor to a heading", () => {
    const broken = docFiles().flatMap((f) => brokenLinks(repo, f, readFileSync(join(repo, f), "utf8")));
    expect(broken).toEqual([]);
  });

  test("a link outside the repository, to a missing file or to a missing heading is reported; code blocks are not read", () => {
    const md = [
      "# Local heading",
      "[a](install.md#the-image) [b](install.md#no-such-heading) [c](no-such-page.md) [d](../README.md)",
      "[e](#local-heading) [f](#nowhere) [g](https://liqo.io/x.md) and the design, `../shared/DESIGN.md`",
      "```",
      "[h](not-read.md)",
      "```",
    ].join("\n");
    expect(brokenLinks(repo, "docs/page.md", md)).toEqual([
      "docs/page.md: install.md#no-such-heading: no heading with that anchor",
      "docs/page.md: no-such-page.md: no such file",
      "docs/page.md: #nowhere: no heading with that anchor",
      "docs/page.md: ../shared/DESIGN.md is outside the repository",
    ]);
  });
});

describe("the committed liqoctl reference", () => {
  const regenerate = `rm -r ${REFERENCE} && node_modules/.bin/bun run liqoctl docs --dir ${REFERENCE}`;

  test(`${REFERENCE} is what liqoctl docs writes now`, async () => {
    const drift = referenceDrift(markdownDocs(await commandTree(main)), join(repo, REFERENCE));
    expect(drift, `the reference is out of date; regenerate it with:\n  ${regenerate}\n${drift.join("\n")}`).toEqual(
      [],
    );
  }, 30_000);

  test("a changed, a missing and a left-over page are each reported", () => {
    const dir = mkdtempSync(join(tmpdir(), "liqo-reference-"));
    try {
      const pages = new Map([
        ["liqoctl.md", "# liqoctl\n"],
        ["liqoctl_status.md", "# liqoctl status\n"],
        ["liqoctl_version.md", "# liqoctl version\n"],
      ]);
      writeFileSync(join(dir, "liqoctl.md"), "# liqoctl\n");
      writeFileSync(join(dir, "liqoctl_status.md"), "# liqoctl status\n| `--made-up` |\n");
      writeFileSync(join(dir, "liqoctl_gone.md"), "# liqoctl gone\n");
      expect(referenceDrift(pages, dir).sort()).toEqual([
        "liqoctl_gone.md names no command any more",
        "liqoctl_status.md differs from what liqoctl docs writes",
        "liqoctl_version.md is missing",
      ]);
      writeFileSync(join(dir, "liqoctl_status.md"), "# liqoctl status\n");
      writeFileSync(join(dir, "liqoctl_version.md"), "# liqoctl version\n");
      rmSync(join(dir, "liqoctl_gone.md"));
      expect(referenceDrift(pages, dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
