// What the liqoctl peering commands share: flags, argument checks, finding ForeignClusters, and
// waiting for the peering phases with progress lines, naming the phase that did not complete.
import { ForeignClusterResource, type PeeringCondition, type PeeringConditionType } from "../core/apis/index.ts";
import type { KubeClient } from "../core/kube/client.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { clusterIdProblem, clusterNameProblem } from "../core/peering/identity.ts";
import { CliError, ExitCode } from "./errors.ts";
import { parseDuration, spinner, warn } from "./ui.ts";

export const kubeFlags = {
  kubeconfig: { type: "string", description: "path to the kubeconfig (default: KUBECONFIG, ~/.kube/config)" },
  context: { type: "string", description: "kubeconfig context to use" },
  "liqo-namespace": { type: "string", default: "liqo", description: "namespace where liqo runs" },
} as const;

/**
 * kubeFlags where, as in Liqo, `-n`/`--namespace` also name liqo's namespace: for the commands that
 * have no other namespace (Liqo's generate, peer, unpeer in-band, status).
 */
export const liqoKubeFlags = {
  ...kubeFlags,
  "liqo-namespace": { ...kubeFlags["liqo-namespace"], alias: ["namespace", "n"] as string[] },
} as const;

export const timeoutFlag = {
  timeout: { type: "string", default: "120s", description: "how long to wait for each phase (e.g. 90s, 5m)" },
} as const;

export function timeoutMs(text: string): number {
  try {
    return parseDuration(text, "timeout");
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}

export function checkClusterName(name: string, what = "cluster name"): void {
  const problem = clusterNameProblem(name);
  if (problem) throw new CliError(`${what}: ${problem}`);
}

export function checkClusterId(id: string): void {
  const problem = clusterIdProblem(id);
  if (problem) throw new CliError(`--cluster-id: ${problem}`);
}

export function checkAuthUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(
      `--auth-url ${url} is not a URL; use the https URL liqoctl generate peer-command prints, e.g. https://10.0.0.5:30443`,
    );
  }
  if (parsed.protocol !== "https:")
    throw new CliError(`--auth-url ${url} must use https (the authentication service serves only TLS)`);
  // The ForeignCluster CRD (Liqo's pattern) wants a dotted host or an IP.
  if (!parsed.hostname.includes(".") && !parsed.hostname.includes(":"))
    throw new CliError(`--auth-url ${url}: the host must be a domain name with a dot or an IP address`);
}

export async function foreignClusterByName(client: KubeClient, name: string): Promise<ForeignClusterObject> {
  const fc = await client.find<ForeignClusterObject>(ForeignClusterResource, name);
  if (!fc)
    throw new CliError(
      `ForeignCluster ${name} does not exist; list them with kubectl get foreignclusters, or peer with liqoctl peer out-of-band ${name} --auth-url ... --cluster-id ... --auth-token ...`,
      ExitCode.Failure,
    );
  return fc;
}

export interface Phase {
  type: PeeringConditionType;
  /** Shown while waiting and once done. */
  waiting: string;
  done: string;
  /** The statuses that complete the phase (default Established). */
  until?: string[];
}

/** The statuses that end a joining phase in failure. */
export const FAILED_STATUSES: ReadonlySet<string> = new Set(["Denied", "EmptyDenied", "Error"]);

/** The phases of an outgoing peering, in order: authentication, the network when enabled, then the peering itself. */
export function outgoingPhases(name: string, networking: boolean): Phase[] {
  return [
    {
      type: "AuthenticationStatus",
      waiting: `Authenticating with cluster ${name}`,
      done: `Authenticated with cluster ${name}`,
    },
    ...(networking
      ? [
          {
            type: "NetworkStatus" as const,
            waiting: `Establishing the network with cluster ${name}`,
            done: `Network established with cluster ${name}`,
          },
        ]
      : []),
    {
      type: "OutgoingPeering",
      waiting: `Activating the outgoing peering with cluster ${name}`,
      done: `Outgoing peering with cluster ${name} established: node liqo-${name} is Ready`,
    },
  ];
}

/** What a ForeignCluster without any status after a while means (the first reconcile writes one). */
export function noControllerHint(name: string, afterMs: number, liqoNamespace = "liqo"): string {
  return `ForeignCluster ${name} has no status after ${Math.round(afterMs / 1000)}s: no liqo controller manager with the foreigncluster controller is running in this cluster; check kubectl -n ${liqoNamespace} get pods (or run liqo controller-manager, which runs every controller by default)`;
}

export interface WaitOptions {
  /** How long a ForeignCluster may go without any status before liqoctl says why (default 20s). */
  hintAfterMs?: number;
  liqoNamespace?: string;
}

/**
 * Waits for each phase in order; fails (exit 1) naming the phase, with the condition's reason and
 * message, as soon as a phase reports Denied/Error or when the timeout passes. With `goneUid`, waits
 * for the ForeignCluster of that UID to be deleted. A ForeignCluster that no controller ever
 * reconciled is named as such after hintAfterMs, not only at the timeout.
 */
export async function waitPhases(
  client: KubeClient,
  name: string,
  phases: Phase[],
  timeout: number,
  goneUid?: string,
  o: WaitOptions = {},
): Promise<void> {
  const gone = goneUid !== undefined;
  const hintAfterMs = o.hintAfterMs ?? 20_000;
  const begun = Date.now();
  let hinted = false;
  for (const phase of phases) {
    const spin = spinner(phase.waiting);
    const deadline = Date.now() + timeout;
    let last: PeeringCondition | undefined;
    while (true) {
      const found = await client.find<ForeignClusterObject>(ForeignClusterResource, name);
      // The provider side may re-create a ForeignCluster of that name at once (the peer still asks
      // us for resources): a new UID means ours is gone.
      const fc = gone && found && found.metadata.uid !== goneUid ? undefined : found;
      if (!fc) {
        if (gone) {
          spin.succeed(phase.done);
          break;
        }
        spin.fail(`${phase.waiting}: ForeignCluster ${name} disappeared`);
        throw new CliError(
          `ForeignCluster ${name} was deleted while waiting for phase ${phase.type}`,
          ExitCode.Failure,
        );
      }
      last = fc.status?.peeringConditions?.find((c) => c.type === phase.type);
      if (last && (phase.until ?? ["Established"]).includes(last.status)) {
        spin.succeed(phase.done);
        break;
      }
      // Unpeering waits through whatever state the peering was in; only joining phases fail early.
      if (last && !phase.until && FAILED_STATUSES.has(last.status)) {
        spin.fail(`${phase.type} ${last.status}: ${last.message ?? last.reason ?? ""}`);
        throw new CliError(
          `phase ${phase.type} failed (${last.status}, ${last.reason}): ${last.message}`,
          ExitCode.Failure,
        );
      }
      if (last?.message) spin.update(`${phase.waiting} (${last.status}: ${last.message})`);
      const unreconciled = !gone && !fc.status?.peeringConditions?.length && Date.now() - begun >= hintAfterMs;
      if (unreconciled && !hinted) {
        hinted = true;
        warn(noControllerHint(name, Date.now() - begun, o.liqoNamespace));
      }
      if (Date.now() > deadline) {
        spin.fail(`${phase.waiting}: timed out`);
        const why = last
          ? `it is ${last.status} (${last.reason}): ${last.message}`
          : unreconciled
            ? noControllerHint(name, Date.now() - begun, o.liqoNamespace)
            : "the controller manager has not reported it (is liqo controller-manager running with the foreigncluster controller?)";
        throw new CliError(
          `phase ${phase.type} did not complete within ${Math.round(timeout / 1000)}s: ${why}`,
          ExitCode.Failure,
        );
      }
      await Bun.sleep(500);
    }
  }
}

/**
 * Subcommands where any other word is a cluster name: `liqoctl peer out-of-band x ...` and
 * `liqoctl peer x` share one command, as in Liqo. citty looks a subcommand up by name, so a Proxy
 * answers every name; help still lists only the fixed ones.
 */
export function namedOr<T extends Record<string, unknown>>(fixed: T, forName: (name: string) => unknown): T {
  const cache = new Map<string, unknown>();
  return new Proxy(fixed, {
    has: () => true,
    get(target, key) {
      if (typeof key !== "string" || key in target) return (target as Record<string | symbol, unknown>)[key];
      if (!cache.has(key)) cache.set(key, forName(key));
      return cache.get(key);
    },
  });
}
