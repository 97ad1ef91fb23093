// liqoctl test network: proves a peering's network fabric works end to end with real pods on both
// sides, prints a table of the checks with the likely cause of each failure, and exits non-zero
// when one failed. Nothing stays behind: the test's namespace is removed at the end, on a failure
// and on Ctrl-C (a run killed outright leaves it until a later run finds it expired).
import { defineCommand } from "citty";
import { ForeignClusterResource } from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { CHECK_TITLES, type CheckId, likelyCause, renderTable, type Row } from "../../netfabric/selftest/probes.ts";
import { CliError, ExitCode } from "../errors.ts";
import { kubeFlags } from "../peering.ts";
import { choosePeers, preflight } from "../test-network/preflight.ts";
import { cleanup, createNamespace, Interrupted, namespaceFor, runChecks, sweepExpired } from "../test-network/run.ts";
import { info, parseDuration, warn } from "../ui.ts";
import { findDeployment, securityModeOf, type SecurityMode } from "../deployment-args.ts";

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
/** With --remote-kubeconfig: the checks of the security modes. */
const PEER: CheckId[] = ["pod-to-peer-pod", "peer-pod-to-pod", "peer-pod-to-reflected-service"];

/** A row's title: what the check tries and, for a path a security mode must refuse, that it must. */
function title(id: CheckId, modes?: { localMode: SecurityMode; peerMode: SecurityMode }): string {
  const mode = id === "pod-to-peer-pod" ? modes?.peerMode : id === "peer-pod-to-pod" ? modes?.localMode : undefined;
  return mode === "IntraClusterTrafficSegregation" ? `${CHECK_TITLES[id]} (must be refused)` : CHECK_TITLES[id];
}
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
      description:
        "a liqo image for the test pods (they run `liqo test-server`, sh, curl, ping, nc); default: the image liqo's controller manager runs from, here and in the peer",
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
    "remote-kubeconfig": {
      type: "string",
      description:
        "kubeconfig of the peer: adds a pod of the peer's own, to check what the security modes (networking.securityMode) let through and refuse",
    },
    "remote-context": { type: "string", description: "context of --remote-kubeconfig to use" },
    "remote-liqo-namespace": { type: "string", default: "liqo", description: "namespace where liqo runs in the peer" },
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
    const image = args.image || (await liqoImage(client, args["liqo-namespace"], "here"));
    let remote: { client: KubeClient; image: string; localMode: SecurityMode; peerMode: SecurityMode } | undefined;
    if (args["remote-kubeconfig"]) {
      if (peers.length !== 1)
        throw new CliError(
          `--remote-kubeconfig is one peer's: name the peering it belongs to (liqoctl test network <cluster> --remote-kubeconfig ...)`,
        );
      const remoteClient = createKubeClient({ kubeconfig: args["remote-kubeconfig"], context: args["remote-context"] });
      const peerGateway = await findDeployment(remoteClient, "liqo-gateway", args["remote-liqo-namespace"]);
      if (!peerGateway)
        throw new CliError(
          `--remote-kubeconfig ${args["remote-kubeconfig"]}: no Deployment ${args["remote-liqo-namespace"]}/liqo-gateway there (is it ${peers[0]!.metadata.name}'s kubeconfig, with liqo installed? --remote-liqo-namespace names its namespace)`,
        );
      remote = {
        client: remoteClient,
        image: args.image || (await liqoImage(remoteClient, args["remote-liqo-namespace"], "in the peer")),
        peerMode: securityModeOf(peerGateway),
        localMode: securityModeOf(await findDeployment(client, "liqo-gateway", args["liqo-namespace"])),
      };
      info(`security modes: ${remote.localMode} here, ${remote.peerMode} in ${peers[0]!.metadata.name}`);
    }
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
        const { rows: pre, peer } = await settledPreflight(client, fc, args["liqo-namespace"], abort.signal);
        if (abort.signal.aborted) {
          process.exitCode = INTERRUPTED;
          return;
        }
        const rows: Row[] = pre.map((r) => ({ check: r.check, result: r.ok ? "passed" : "FAILED", detail: r.detail }));
        const wanted = args.basic ? BASIC : remote ? [...ALL, ...PEER] : ALL;
        if (!peer) {
          failed = true;
          rows.push(
            ...wanted.map((id) => ({
              check: title(id, remote),
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
        // The peer's own namespace: liqo does not manage it, so its pods are the peer's, not ours.
        const own = `${ns}-own`;
        if (remote) await createNamespace(remote.client, own, deadline);
        let outcome: Awaited<ReturnType<typeof runChecks>> | undefined;
        let error: Error | undefined;
        try {
          outcome = await runChecks(
            {
              client,
              peer,
              image,
              basic: args.basic,
              deadline,
              probeBudget: Math.ceil(checkMs / 1000),
              signal: abort.signal,
              say: info,
              remote: remote && { ...remote, namespace: own },
            },
            ns,
          );
        } catch (err) {
          if (!(err instanceof Error) || (err instanceof Interrupted && !abort.signal.aborted)) throw err;
          error = err;
        } finally {
          if (!args.keep || abort.signal.aborted) {
            info(`removing namespace ${ns} (and its copy in ${name})`);
            const gone = Date.now() + 120_000;
            const [here, there] = await Promise.all([
              cleanup(client, ns, gone),
              remote ? cleanup(remote.client, own, gone) : true,
            ]);
            if (!here) warn(`namespace ${ns} is still terminating after 120s: kubectl get namespace ${ns}`);
            if (!there)
              warn(
                `namespace ${own} in ${name} is still terminating after 120s: kubectl --kubeconfig <peer> get namespace ${own}`,
              );
          } else {
            info(
              `--keep: namespace ${ns}${remote ? ` (and ${own} in ${name})` : ""} stays; remove it with kubectl delete namespace ${ns}`,
            );
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
          if (r?.ok) rows.push({ check: title(id, remote), result: "passed", detail: r.detail });
          else if (r)
            rows.push({
              check: title(id, remote),
              result: "FAILED",
              detail: `${r.detail} — likely cause: ${likelyCause(r, results, facts)}`,
            });
          else
            rows.push({ check: title(id, remote), result: "FAILED", detail: miss?.why ?? error?.message ?? "not run" });
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

/** How long a tunnel that is still coming up (a peering made a moment ago) is waited for. */
const TUNNEL_SETTLE_MS = 90_000;

/**
 * The preflight, repeated while the only thing missing is a tunnel still coming up (no status yet,
 * or Connecting), as right after `liqoctl peer`; any other failure is reported at once.
 */
async function settledPreflight(client: KubeClient, fc: ForeignClusterObject, ns: string, signal: AbortSignal) {
  const until = Date.now() + TUNNEL_SETTLE_MS;
  let said = false;
  for (let current = fc; ; ) {
    const result = await preflight(client, current, ns);
    const failed = result.rows.filter((r) => !r.ok);
    const settling =
      failed.length > 0 &&
      failed.every((r) => r.check === "WireGuard tunnel" && /without status|Connecting/.test(r.detail));
    if (!settling || Date.now() > until || signal.aborted) return result;
    if (!said) info(`waiting up to ${TUNNEL_SETTLE_MS / 1000}s for the tunnel to connect: ${failed[0]!.detail}`);
    said = true;
    await Bun.sleep(2000);
    current = (await client.find<ForeignClusterObject>(ForeignClusterResource, fc.metadata.name!)) ?? current;
  }
}

/**
 * The image liqo runs from in a cluster (its controller manager's): the test pods run `liqo
 * test-server` and the probes' tools from it, so the test needs no image but the one the cluster
 * already pulls.
 */
async function liqoImage(client: KubeClient, namespace: string, where: string): Promise<string> {
  const image = (await findDeployment(client, "liqo-controller-manager", namespace))?.spec?.template?.spec
    ?.containers?.[0]?.image;
  if (!image)
    throw new CliError(
      `no Deployment ${namespace}/liqo-controller-manager ${where} to take the test pods' image from: is liqo installed in namespace ${namespace}? (--liqo-namespace${where === "here" ? "" : " / --remote-liqo-namespace"}), or give --image <a liqo image>`,
    );
  return image;
}

export default defineCommand({
  meta: { name: "test", description: "Run end-to-end checks against the clusters" },
  subCommands: { network },
});
