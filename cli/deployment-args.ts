// What a liqo Deployment runs with, read from its first container's flags (liqoctl status and
// liqoctl test network both ask: the network security mode, the quota mode, discovery's switches).
import type { KubeClient } from "../core/kube/client.ts";
import { Resources, type KubeObject } from "../core/kube/resources.ts";
import { DEFAULT_SECURITY_MODE, isSecurityMode, type SecurityMode } from "../netfabric/gateway/filter-table.ts";

export type Deployment = KubeObject & {
  spec?: { replicas?: number; template?: { spec?: { containers?: { image?: string; args?: string[] }[] } } };
  status?: { readyReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
};

/** The value of `--name value` or `--name=value` in a container's args. */
export function argValue(args: string[], name: string): string | undefined {
  const at = args.indexOf(`--${name}`);
  if (at >= 0) return args[at + 1];
  return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** The first container's flag of a Deployment (undefined: not set, or no such Deployment). */
export function deploymentArg(deployment: Deployment | undefined, name: string): string | undefined {
  return argValue(deployment?.spec?.template?.spec?.containers?.[0]?.args ?? [], name);
}

export function findDeployment(client: KubeClient, name: string, ns: string): Promise<Deployment | undefined> {
  return client.find<Deployment>(Resources.deployments, name, ns).catch(() => undefined);
}

export type { SecurityMode };

/** The security mode a liqo-gateway Deployment enforces (the default when the flag is absent). */
export function securityModeOf(gateway: Deployment | undefined): SecurityMode {
  const mode = deploymentArg(gateway, "security-mode");
  return mode !== undefined && isSecurityMode(mode) ? mode : DEFAULT_SECURITY_MODE;
}
