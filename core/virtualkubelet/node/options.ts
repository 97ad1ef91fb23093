// Options of the virtual node, checked once with messages that name the option and the fix.
import type { NodeResources } from "./forge.ts";
import type { VirtualNodeOptions } from "./virtual-node.ts";

export class VirtualNodeError extends Error {
  override name = "VirtualNodeError";
}

export interface ResolvedVirtualNodeOptions {
  nodeName: string;
  remoteClusterId: string;
  remoteClusterName: string;
  remoteClusterLabels: Record<string, string>;
  resources: NodeResources;
  address: string;
  kubeletPort: number;
  kubeletVersion: string;
  healthIntervalMs: number;
  failureThreshold: number;
  leaseRenewMs: number;
  leaseDurationSeconds: number;
  statusReportMs: number;
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
// Kubernetes quantities: a number with an optional binary or decimal suffix.
const quantity = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;

export function validateVirtualNodeOptions(o: VirtualNodeOptions): ResolvedVirtualNodeOptions {
  const fail = (msg: string): never => {
    throw new VirtualNodeError(`virtual node for ${o.remoteClusterName || "(no remoteClusterName)"}: ${msg}`);
  };
  if (!o.remoteClusterId)
    fail("remoteClusterId is empty; pass the remote cluster's ID (its ForeignCluster's clusterID)");
  if (!o.remoteClusterName) fail("remoteClusterName is empty; pass the remote cluster's name");
  const nodeName = o.nodeName ?? `liqo-${o.remoteClusterName}`;
  if (!dnsSubdomain.test(nodeName))
    fail(`node name "${nodeName}" is not a valid DNS subdomain (lowercase letters, digits, '-' and '.')`);
  if (!o.resources || typeof o.resources !== "object")
    fail('resources is missing; pass the negotiated resources, e.g. {cpu: "4", memory: "8Gi", pods: "110"}');
  for (const [name, value] of Object.entries(o.resources)) {
    if (typeof value !== "string" || !quantity.test(value))
      fail(`resource ${name}="${String(value)}" is not a Kubernetes quantity (e.g. "4", "500m", "8Gi")`);
  }
  if (!o.address || !/^[0-9a-fA-F:.]+$/.test(o.address))
    fail(
      `address "${o.address ?? ""}" is not an IP address; pass the IP at which the API server reaches the kubelet API`,
    );
  if (!Number.isInteger(o.kubeletPort) || o.kubeletPort < 1 || o.kubeletPort > 65535)
    fail(`kubeletPort ${o.kubeletPort} is not a TCP port (1-65535)`);
  const positive = (name: string, v: number | undefined, dflt: number) => {
    const x = v ?? dflt;
    if (!Number.isFinite(x) || x <= 0) fail(`${name} must be a positive number, got ${v}`);
    return x;
  };
  const failureThreshold = positive("failureThreshold", o.failureThreshold, 3);
  if (!Number.isInteger(failureThreshold)) fail(`failureThreshold must be an integer, got ${failureThreshold}`);
  return {
    nodeName,
    remoteClusterId: o.remoteClusterId,
    remoteClusterName: o.remoteClusterName,
    remoteClusterLabels: { ...(o.remoteClusterLabels ?? {}) },
    resources: { ...o.resources },
    address: o.address,
    kubeletPort: o.kubeletPort,
    kubeletVersion: o.kubeletVersion ?? "v1.34.0-liqo",
    healthIntervalMs: positive("healthIntervalMs", o.healthIntervalMs, 5000),
    failureThreshold,
    leaseRenewMs: positive("leaseRenewMs", o.leaseRenewMs, 10_000),
    leaseDurationSeconds: positive("leaseDurationSeconds", o.leaseDurationSeconds, 40),
    statusReportMs: positive("statusReportMs", o.statusReportMs, 60_000),
  };
}
