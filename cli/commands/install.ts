// liqoctl install <provider>: detects what it can about the cluster, turns flags and findings into
// chart values, and lets Helm install or upgrade the release (atomically: rolled back on timeout).
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { defineCommand, type ArgsDef } from "citty";
import type { AnyCommand } from "../command-def.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { CliError, ExitCode } from "../errors.ts";
import { configureClusterDns } from "../install/coredns.ts";
import { detectAndDescribe } from "../install/run.ts";
import { probeLoadBalancer } from "../install/load-balancer.ts";
import { ensurePodSecurity, labelCommand } from "../install/pod-security.ts";
import { checkClusterRequirements } from "../install/requirements.ts";
import { findHelm, releaseStatus, releaseValues, type HelmTarget } from "../install/helm.ts";
import { RELEASE, upgradeRelease } from "../install/upgrade-release.ts";
import { providers, type Provider } from "../install/providers.ts";
import { chartValues, helmInstallCommand, setFlagProblem, type InstallFlags } from "../install/values.ts";
import { givenFlags, upgradeValues, valuesDiff } from "../install/upgrade-values.ts";
import { info, parseDuration, repeatedFlag, spinner, warn } from "../ui.ts";
import { liqoVersion } from "../version.ts";

export { RELEASE };

export const commonInstallArgs = {
  "cluster-name": {
    type: "string",
    description:
      "name of this cluster in liqo (default: the provider's name for it, else generated from the cluster ID)",
  },
  "cluster-labels": {
    type: "string",
    description: "labels identifying the cluster, propagated to peers' virtual nodes: k=v,k2=v2",
  },
  "sharing-percentage": {
    type: "string",
    description: "maximum percentage (0-100) of the cluster's resources shared with each peer (default 30)",
  },
  "reserved-subnets": {
    type: "string",
    description:
      "private CIDRs liqo must not use to remap peers (comma-separated); pod and service CIDRs are added automatically",
  },
  "enable-ha": {
    type: "boolean",
    description: "two replicas (active/standby) of the gateway and the controller manager",
  },
  "enable-metrics": {
    type: "boolean",
    description:
      "serve each role's Prometheus metrics on its pod IP (HTTPS; scrapers need the ClusterRole liqo-metrics-reader)",
  },
  "api-server-url": {
    type: "string",
    description: "https URL peers reach this cluster's API server at (default: detected, else the kubeconfig's)",
  },
  "pod-cidr": { type: "string", description: "the cluster's pod CIDR (default: detected where the provider allows)" },
  "service-cidr": { type: "string", description: "the cluster's service CIDR (default: detected)" },
  "reflection-policy": {
    type: "string",
    description:
      "what is reflected to providers, per kind: kind=all|opt-in|none,... (configmaps, secrets, services, endpointslices, ingresses, events; default all)",
  },
  timeout: {
    type: "string",
    default: "10m",
    description: "how long to wait for the installation; once expired Helm rolls back to the previous state",
  },
  verbose: { type: "boolean", alias: "v", description: "print what was detected, the values and Helm's output" },
  version: {
    type: "string",
    description: `liqo version (image tag) to install (default: ${liqoVersion}, the chart's)`,
  },
  "local-chart-path": {
    type: "string",
    description: "install the chart from this directory instead of the one built into liqoctl",
  },
  set: { type: "string", description: "set a chart value, Helm syntax (key=value); repeatable" },
  "skip-clusterset-dns": {
    type: "boolean",
    description:
      "leave the cluster's CoreDNS alone: clusterset.local (the MCS API's names) is not forwarded to liqo (default: a server block in kube-system/coredns)",
  },
  "only-output-values": {
    type: "boolean",
    description: "write the values file and stop, to install with helm yourself",
  },
  "dump-values-path": {
    type: "string",
    description: "where to write the values file (default ./values.yaml with --only-output-values)",
  },
  namespace: { type: "string", alias: "n", default: "liqo", description: "namespace to install liqo into" },
  kubeconfig: { type: "string", description: "path to the kubeconfig (default: KUBECONFIG, ~/.kube/config)" },
  context: { type: "string", description: "kubeconfig context to use" },
} as const satisfies ArgsDef;

type Args = Record<string, string | boolean | undefined> & { _: string[] };

function installFlags(args: Args): InstallFlags {
  const s = (k: string) => (typeof args[k] === "string" ? (args[k] as string) : undefined);
  return {
    clusterName: s("cluster-name"),
    clusterLabels: s("cluster-labels"),
    sharingPercentage: s("sharing-percentage"),
    reservedSubnets: s("reserved-subnets"),
    // Booleans stay undefined unless given: on an installed release, a flag left out keeps its value.
    enableHa: args["enable-ha"] === undefined ? undefined : args["enable-ha"] === true,
    enableMetrics: args["enable-metrics"] === undefined ? undefined : args["enable-metrics"] === true,
    version: s("version"),
    apiServerUrl: s("api-server-url"),
    podCidr: s("pod-cidr"),
    serviceCidr: s("service-cidr"),
    reflectionPolicy: s("reflection-policy"),
  };
}

async function runInstall(provider: Provider, args: Args, rawArgs: string[]) {
  const flags = installFlags(args);
  let timeoutMs: number;
  try {
    timeoutMs = parseDuration(args.timeout as string, "timeout");
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  // Flag mistakes are reported before any cluster access: check them against placeholder networks.
  chartValues(
    provider,
    flags,
    { podCIDR: "192.0.2.0/30", serviceCIDR: "198.51.100.0/30", clusterLabels: {}, serviceType: "NodePort", notes: [] },
    undefined,
  );
  const sets = repeatedFlag(rawArgs, "set");
  for (const s of sets) {
    const p = setFlagProblem(s);
    if (p) throw new CliError(p);
  }
  const chartPath = args["local-chart-path"] as string | undefined;
  if (chartPath && !existsSync(join(chartPath, "Chart.yaml")))
    throw new CliError(
      `--local-chart-path ${chartPath}: no Chart.yaml there; point it at the chart directory (the repository's chart/)`,
    );
  const namespace = args.namespace as string;
  const target = {
    kubeconfig: args.kubeconfig as string | undefined,
    context: args.context as string | undefined,
    namespace,
  };
  const verbose = args.verbose === true;

  const client = createKubeClient({ kubeconfig: target.kubeconfig, context: target.context });
  // Too old a cluster is refused before anything is detected or written.
  await checkClusterRequirements(client);
  // Writing values only needs no helm; when there is one, an installed release is found through it.
  const helm = args["only-output-values"] ? tryFindHelm() : findHelm();
  const previous = helm ? await releaseStatus(helm, RELEASE, target) : undefined;
  let values: Record<string, unknown>;
  if (helm && previous) {
    values = await keptValues(helm, provider, flags, sets, target);
  } else {
    const { detected, clusterId } = await detectAndDescribe(client, provider, args, verbose);
    // A LoadBalancer Service with no controller to serve it would hold `helm --wait` until the timeout.
    const serviceTypeSet = sets.some((s) => s.startsWith("auth.service.type="));
    if (detected.serviceType === "LoadBalancer" && detected.checkLoadBalancer && !serviceTypeSet) {
      const spin = spinner("Checking whether the cluster provides load balancers");
      const lb = await probeLoadBalancer(client);
      if (!lb.available) detected.serviceType = "NodePort";
      spin.succeed(lb.note);
    }
    values = chartValues(provider, flags, detected, clusterId);
  }
  const yaml = `# liqo chart values generated by liqoctl install ${provider.name}\n${Bun.YAML.stringify(values, null, 2)}\n`;
  if (verbose) process.stderr.write(yaml);

  const dumpPath =
    (args["dump-values-path"] as string | undefined) ?? (args["only-output-values"] ? "values.yaml" : undefined);
  if (dumpPath) {
    try {
      await Bun.write(dumpPath, yaml);
    } catch (err) {
      throw new CliError(`--dump-values-path ${dumpPath}: cannot write (${(err as Error).message})`, ExitCode.Failure);
    }
    info(`values written to ${resolve(dumpPath)}`);
  }
  if (args["only-output-values"]) {
    info(
      `install with: ${labelCommand(namespace)} (create the namespace first), then ${helmInstallCommand(RELEASE, namespace, dumpPath!, sets)}`,
    );
    return;
  }

  const helmBin = helm ?? findHelm();
  const labelled = await ensurePodSecurity(client, namespace);
  if (labelled) info(labelled);
  await upgradeRelease({
    helm: helmBin,
    target,
    yaml,
    sets,
    chartPath,
    previous: !!previous,
    timeoutMs,
    timeoutText: args.timeout as string,
    verbose,
    suffix: ` (cluster ${values.clusterName || "name generated"})`,
    client,
  });
  if (!args["skip-clusterset-dns"]) {
    // The release is in place whatever happens here: a DNS that cannot be edited is a warning.
    try {
      const r = await configureClusterDns(client, namespace);
      (r.level === "warn" ? warn : info)(r.message);
    } catch (err) {
      warn(
        `the cluster DNS could not be told to forward clusterset.local (${(err as Error).message}); liqoctl install again, or --skip-clusterset-dns`,
      );
    }
  }
  info(
    previous
      ? "peerings, offloaded pods and reflected objects carry on across the upgrade; liqoctl status shows them"
      : "next: liqoctl generate peer-command, then run its output on the cluster that will offload here",
  );
}

function tryFindHelm(): string | undefined {
  try {
    return findHelm();
  } catch {
    return undefined;
  }
}

/**
 * Liqo installed already: the release's values stay, and only the flags given change theirs. The
 * release's networks stand for detection (nothing is detected again); the changes are shown first.
 */
async function keptValues(
  helm: string,
  provider: Provider,
  flags: InstallFlags,
  sets: string[],
  target: HelmTarget,
): Promise<Record<string, unknown>> {
  const current = await releaseValues(helm, RELEASE, target);
  const networking = (current.networking ?? {}) as { podCIDR?: string; serviceCIDR?: string };
  const auth = (current.auth ?? {}) as { service?: { type?: "LoadBalancer" | "NodePort" } };
  const fresh = chartValues(
    provider,
    flags,
    {
      podCIDR: networking.podCIDR,
      serviceCIDR: networking.serviceCIDR,
      clusterLabels: {},
      serviceType: auth.service?.type ?? "NodePort",
      notes: [],
    },
    typeof current.clusterId === "string" ? current.clusterId : undefined,
  );
  const values = upgradeValues(current, fresh, givenFlags(flags));
  const diff = valuesDiff(current, values, sets);
  info(
    diff.length
      ? `liqo is installed in namespace ${target.namespace}: its values stay, except\n  ${diff.join("\n  ")}`
      : `liqo is installed in namespace ${target.namespace}: its values stay as they are (no flag changes one)`,
  );
  return values;
}

function providerCommand(p: Provider): AnyCommand {
  return defineCommand({
    meta: { name: p.name, description: p.description },
    args: { ...commonInstallArgs, ...p.flags },
    run: ({ args, rawArgs }) => runInstall(p, args as Args, rawArgs),
  });
}

export default defineCommand({
  meta: {
    name: "install",
    alias: "upgrade",
    description:
      "Install or upgrade liqo with Helm on a cluster of the given provider (none given: generic, as in Liqo)",
  },
  default: "generic",
  subCommands: Object.fromEntries(Object.values(providers).map((p) => [p.name, providerCommand(p)])),
});
