// From liqoctl install's flags and what the provider detected to the chart's values. Pure: every
// check names the flag to fix, and the result is what --only-output-values prints.
import { clusterNameProblem, generatedClusterName, parseClusterLabels } from "../../core/peering/identity.ts";
import { parseReflectionPolicy, type ReflectionPolicy } from "../../core/reflection/policy.ts";
import { CliError } from "../errors.ts";
import type { Detection, Provider } from "./providers.ts";

export interface InstallFlags {
  clusterName?: string;
  clusterLabels?: string;
  sharingPercentage?: string;
  reservedSubnets?: string;
  enableHa?: boolean;
  /** Liqo's --enable-metrics: the chart's metrics.enabled (each role's /metrics on its pod IP). */
  enableMetrics?: boolean;
  version?: string;
  apiServerUrl?: string;
  podCidr?: string;
  serviceCidr?: string;
  /** kind=mode,...: the chart's reflection.policy (core/reflection/policy.ts). */
  reflectionPolicy?: string;
}

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

export function cidrProblem(value: string): string | undefined {
  const m = CIDR.exec(value);
  if (!m || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) > 32)
    return `${value} is not an IPv4 CIDR such as 10.244.0.0/16`;
  const ip = m.slice(1, 5).reduce((acc, o) => acc * 256 + Number(o), 0);
  const bits = Number(m[5]);
  const host = bits === 0 ? ip : ip % 2 ** (32 - bits);
  if (host !== 0)
    return `${value} has host bits set; the network is ${[24, 16, 8, 0].map((s) => Math.floor((ip - host) / 2 ** s) % 256).join(".")}/${bits}`;
  return undefined;
}

function cidrFlag(value: string, flag: string): string {
  const problem = cidrProblem(value.trim());
  if (problem) throw new CliError(`--${flag}: ${problem}`);
  return value.trim();
}

/** `--set a.b=c` is Helm's syntax; catch what helm would reject less clearly. */
export function setFlagProblem(value: string): string | undefined {
  const eq = value.indexOf("=");
  if (eq <= 0) return `--set ${value}: expected key=value (Helm syntax), e.g. --set auth.service.type=NodePort`;
  if (value.startsWith(".") || value.slice(0, eq).includes(".."))
    return `--set ${value}: the key has an empty path segment; write it as a.b.c=value`;
  return undefined;
}

/** A word as a POSIX shell reads it back: quoted only when it must be. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=,@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The helm command that installs what `--only-output-values` wrote: the values file carries what
 * liqoctl generated, and the `--set` flags given stay flags (Helm applies them over the file).
 */
export function helmInstallCommand(release: string, namespace: string, valuesPath: string, sets: string[]): string {
  return [
    "helm upgrade --install",
    release,
    "<chart>",
    "--namespace",
    shellWord(namespace),
    "--values",
    shellWord(valuesPath),
    ...sets.map((s) => `--set ${shellWord(s)}`),
  ].join(" ");
}

/** The chart values, or a CliError naming every flag that is missing or wrong. */
export function chartValues(
  provider: Provider,
  flags: InstallFlags,
  detected: Detection,
  clusterId: string | undefined,
): Record<string, unknown> {
  const podCIDR = flags.podCidr ? cidrFlag(flags.podCidr, "pod-cidr") : detected.podCIDR;
  const serviceCIDR = flags.serviceCidr ? cidrFlag(flags.serviceCidr, "service-cidr") : detected.serviceCIDR;
  const missing: string[] = [];
  if (!podCIDR)
    missing.push(
      `the pod CIDR could not be detected on ${provider.name}: pass --pod-cidr (${provider.podCidrHint ?? "the pod network range"})`,
    );
  if (!serviceCIDR)
    missing.push(
      `the service CIDR could not be detected: pass --service-cidr (the API server's --service-cluster-ip-range)`,
    );
  if (missing.length) throw new CliError(missing.join("\n  "));

  let apiServerUrl = flags.apiServerUrl ?? detected.apiServerUrl ?? "";
  if (flags.apiServerUrl !== undefined) {
    try {
      if (new URL(apiServerUrl).protocol !== "https:") throw new Error();
    } catch {
      throw new CliError(
        `--api-server-url ${apiServerUrl}: use the https:// URL peers reach the API server at, e.g. https://203.0.113.10:6443`,
      );
    }
    apiServerUrl = apiServerUrl.replace(/\/+$/, "");
  }

  const clusterName = flags.clusterName ?? detected.clusterName ?? (clusterId ? generatedClusterName(clusterId) : "");
  if (clusterName) {
    const problem = clusterNameProblem(clusterName);
    if (problem) throw new CliError(`--cluster-name: ${problem}`);
  }
  let labels: Record<string, string>;
  try {
    labels = parseClusterLabels(flags.clusterLabels);
  } catch (err) {
    throw new CliError(`--cluster-labels: ${(err as Error).message}`);
  }

  let sharing = 30;
  if (flags.sharingPercentage !== undefined) {
    sharing = Number(flags.sharingPercentage);
    if (!Number.isInteger(sharing) || sharing < 0 || sharing > 100)
      throw new CliError(`--sharing-percentage ${flags.sharingPercentage}: use a whole number from 0 to 100`);
  }
  const reserved = (flags.reservedSubnets ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => cidrFlag(s, "reserved-subnets"));
  for (const r of reserved) {
    if (r === podCIDR || r === serviceCIDR)
      throw new CliError(`--reserved-subnets ${r}: the pod and service CIDRs are reserved already; leave them out`);
  }

  let policy: ReflectionPolicy | undefined;
  if (flags.reflectionPolicy !== undefined) {
    try {
      policy = parseReflectionPolicy(flags.reflectionPolicy, `--reflection-policy ${flags.reflectionPolicy}`);
    } catch (err) {
      throw new CliError((err as Error).message);
    }
  }

  const replicas = flags.enableHa ? 2 : 1;
  return {
    ...(flags.version ? { image: { tag: flags.version } } : {}),
    clusterName,
    ...(clusterId ? { clusterId } : {}),
    clusterLabels: { ...detected.clusterLabels, ...labels },
    sharingPercentage: sharing,
    apiServer: { url: apiServerUrl },
    networking: { podCIDR, serviceCIDR, reservedSubnets: reserved },
    controllerManager: { replicas },
    gateway: { replicas, service: { type: detected.serviceType === "LoadBalancer" ? "LoadBalancer" : "NodePort" } },
    auth: { service: { type: detected.serviceType } },
    ...(policy ? { reflection: { policy } } : {}),
    ...(flags.enableMetrics ? { metrics: { enabled: true } } : {}),
  };
}
