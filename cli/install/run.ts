// The detection step of liqoctl install: ask the provider, add the cluster ID, explain the findings.
import type { KubeClient } from "../../core/kube/client.ts";
import { CliError, ExitCode } from "../errors.ts";
import { spinner } from "../ui.ts";
import { kubeSystemUid, nodePodCidrs } from "./detect.ts";
import { isLoopback, type Detection, type Provider } from "./providers.ts";

export async function detectAndDescribe(
  client: KubeClient,
  provider: Provider,
  flags: Record<string, unknown>,
  verbose: boolean,
): Promise<{ detected: Detection; clusterId?: string }> {
  const spin = spinner(`Detecting the ${provider.name} cluster's parameters`);
  let detected: Detection;
  let clusterId: string | undefined;
  try {
    clusterId = await kubeSystemUid(client);
    detected = await provider.detect(client, flags);
    if (!detected.apiServerUrl && !flags["api-server-url"] && !isLoopback(client.server)) {
      // Peers are given this URL; without it they would get the in-cluster Service address, which
      // only this cluster's pods reach. The kubeconfig's is the address its user reaches.
      detected.apiServerUrl = client.server.replace(/\/+$/, "");
      detected.notes.push(
        `API server ${detected.apiServerUrl}: the kubeconfig's (peers reach it there; if not, give --api-server-url)`,
      );
    }
  } catch (err) {
    spin.fail(`cannot read the cluster at ${client.server}`);
    throw err;
  }
  const missing = [
    !detected.podCIDR && !flags["pod-cidr"] && "pod CIDR",
    !detected.serviceCIDR && !flags["service-cidr"] && "service CIDR",
  ].filter(Boolean);
  if (missing.length) {
    spin.fail(`could not detect the ${missing.join(" and ")}`);
    const nodes = await nodePodCidrs(client).catch(() => [] as string[]);
    if (nodes.length && !detected.podCIDR)
      detected.notes.push(`the nodes' pod ranges are ${nodes.join(", ")}: the cluster's pod CIDR contains them all`);
    const needed = [
      !detected.podCIDR && !flags["pod-cidr"] && `--pod-cidr (${provider.podCidrHint ?? "the pod network range"})`,
      !detected.serviceCIDR && !flags["service-cidr"] && "--service-cidr (the API server's --service-cluster-ip-range)",
    ].filter(Boolean);
    throw new CliError(
      `liqoctl install ${provider.name} could not detect the ${missing.join(" and ")} of this cluster; pass ${needed.join(" and ")}${detected.notes.length ? `\n  ${detected.notes.join("\n  ")}` : ""}`,
      ExitCode.Usage,
    );
  } else {
    spin.succeed(`${provider.name} cluster parameters detected`);
  }
  if (verbose) for (const n of detected.notes) process.stderr.write(` INFO  ${n}\n`);
  if (!clusterId)
    detected.notes.push("the kube-system namespace is not readable: the cluster ID will be generated at install");
  return { detected, clusterId };
}
