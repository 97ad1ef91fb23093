// liqoctl test network: proves a peering's network fabric works end to end with real pods on both
// sides, prints a table of the checks with the likely cause of each failure, and exits non-zero
// when one failed. Nothing stays behind: the test's namespace is removed at the end, on a failure
// and on Ctrl-C (a run killed outright leaves it until a later run finds it expired).
import { defineCommand } from "citty";
import { createKubeClient } from "../../core/kube/client.ts";
import { CHECK_TITLES, type CheckId, likelyCause, renderTable, type Row } from "../../netfabric/selftest/probes.ts";
import { CliError, ExitCode } from "../errors.ts";
import { kubeFlags } from "../peering.ts";
import { choosePeers, preflight } from "../test-network/preflight.ts";
import { cleanup, createNamespace, Interrupted, namespaceFor, runChecks, sweepExpired } from "../test-network/run.ts";
import { info, parseDuration, warn } from "../ui.ts";

const ALL: CheckId[] = [
  "pod-to-remote-pod",
  "remote-pod-to-pod",
  "pod-to-service",
  "remote-pod-to-reflected-service",
  "node-to-remote-pod",
  "path-mtu",
  "remote-path-mtu",
  "tcp-bulk",
  "remote-tcp-bulk",
];
const BASIC: CheckId[] = ["pod-to-remote-pod", "remote-pod-to-pod"];
/** Exit code after Ctrl-C, as shells report a SIGINT death. */
const INTERRUPTED = 130;

const network = defineCommand({
  meta: {
    name: "network",
    alias: "net",
    description:
      "Test the network fabric of a peering with pods on both sides: pod ↔ pod, Services, node → pod, large packets",
  },
  args: {
    cluster: {
      type: "positional",
      required: false,
      description: "the peered cluster to test (default: every peering with networking and an outgoing peering)",
    },
    basic: { type: "boolean", default: false, description: "only the pod ↔ pod checks" },
    image: {
      type: "string",
      default: "ghcr.io/liqo-bun/hello:0.1.0",
      description:
        "image of the test pods: nginx serving 'Server name: <pod>', sh, curl, ping (iputils), nc (openbsd), timeout",
    },
    timeout: {
      type: "string",
      default: "5m",
      description: "deadline for the whole test of one peering (pods included)",
    },
    "check-timeout": {
      type: "string",
      default: "45s",
      description: "how long each check retries before it counts as failed",
    },
    keep: {
      type: "boolean",
      default: false,
      description: "leave the test namespace for inspection (Ctrl-C still removes it)",
    },
    ...kubeFlags,
  },
  async run({ args }) {
    let timeoutMs: number;
    let checkMs: number;
    try {
      timeoutMs = parseDuration(args.timeout, "timeout");
      checkMs = parseDuration(args["check-timeout"], "check-timeout");
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    if (checkMs < 1000) throw new CliError(`--check-timeout ${args["check-timeout"]}: at least 1s`);
    if (checkMs >= timeoutMs)
      throw new CliError(
        `--check-timeout ${args["check-timeout"]} must be shorter than --timeout ${args.timeout} (the pods need time to start too)`,
      );
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const peers = await choosePeers(client, args.cluster);
    const swept = await sweepExpired(client);
    if (swept.length) info(`removed ${swept.length} expired namespace(s) of earlier killed runs: ${swept.join(", ")}`);

    const abort = new AbortController();
    const onSignal = () => {
      warn("interrupted: removing the test namespace (Ctrl-C again to leave it)");
      abort.abort();
    };
    // Once: a second Ctrl-C gets the default behaviour and ends the process at once.
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    let failed = false;
    try {
      for (const fc of peers) {
        const name = fc.metadata.name!;
        info(`testing the network to ${name}`);
        const { rows: pre, peer } = await preflight(client, fc, args["liqo-namespace"]);
        if (abort.signal.aborted) {
          process.exitCode = INTERRUPTED;
          return;
        }
        const rows: Row[] = pre.map((r) => ({ check: r.check, result: r.ok ? "passed" : "FAILED", detail: r.detail }));
        const wanted = args.basic ? BASIC : ALL;
        if (!peer) {
          failed = true;
          rows.push(
            ...wanted.map((id) => ({
              check: CHECK_TITLES[id],
              result: "skipped" as const,
              detail: "the fabric is down (see above)",
            })),
          );
          console.log(`\nNetwork test of ${name}: the fabric is down, no pod was started\n${renderTable(rows)}\n`);
          continue;
        }
        const deadline = Date.now() + timeoutMs;
        const ns = namespaceFor();
        await createNamespace(client, ns, deadline);
        let outcome: Awaited<ReturnType<typeof runChecks>> | undefined;
        let error: Error | undefined;
        try {
          outcome = await runChecks(
            {
              client,
              peer,
              image: args.image,
              basic: args.basic,
              deadline,
              probeBudget: Math.ceil(checkMs / 1000),
              signal: abort.signal,
              say: info,
            },
            ns,
          );
        } catch (err) {
          if (!(err instanceof Error) || (err instanceof Interrupted && !abort.signal.aborted)) throw err;
          error = err;
        } finally {
          if (!args.keep || abort.signal.aborted) {
            info(`removing namespace ${ns} (and its copy in ${name})`);
            if (!(await cleanup(client, ns, Date.now() + 120_000)))
              warn(`namespace ${ns} is still terminating after 120s: kubectl get namespace ${ns}`);
          } else {
            info(`--keep: namespace ${ns} stays; remove it with kubectl delete namespace ${ns}`);
          }
        }
        if (abort.signal.aborted) {
          process.exitCode = INTERRUPTED;
          return;
        }
        const facts = {
          remoteNatPodCidr: peer.tunnel.spec.remoteNATPodCIDR,
          localNatPodCidr: peer.tunnel.spec.localNATPodCIDR,
        };
        const results = outcome?.results ?? [];
        for (const id of wanted) {
          const r = results.find((x) => x.id === id);
          const miss = outcome?.missing.find((m) => m.id === id);
          if (r?.ok) rows.push({ check: CHECK_TITLES[id], result: "passed", detail: r.detail });
          else if (r)
            rows.push({
              check: CHECK_TITLES[id],
              result: "FAILED",
              detail: `${r.detail} — likely cause: ${likelyCause(r, results, facts)}`,
            });
          else
            rows.push({ check: CHECK_TITLES[id], result: "FAILED", detail: miss?.why ?? error?.message ?? "not run" });
        }
        const bad = rows.filter((r) => r.result !== "passed").length;
        if (bad) failed = true;
        console.log(
          `\nNetwork test of ${name}: ${bad ? `${bad} of ${rows.length} checks failed` : `all ${rows.length} checks passed`}\n${renderTable(rows)}\n`,
        );
      }
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
    if (failed) process.exitCode = ExitCode.Failure;
  },
});

export default defineCommand({
  meta: { name: "test", description: "Run end-to-end checks against the clusters" },
  subCommands: { network },
});
