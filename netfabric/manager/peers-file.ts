// The peers the network manager serves, from a YAML file until the peering controller drives it:
//   peers:
//   - remoteClusterId: 4858caa2-…
//     remoteClusterName: milan
//     tenantNamespace: liqo-tenant-milan-3f1c2a
import * as v from "valibot";
import { clusterId, clusterName } from "../../core/apis/fields.ts";
import type { Peer } from "./forge.ts";

const namespace = v.pipe(
  v.string(),
  v.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be a namespace name (DNS-1123 label)"),
);

const PeersFile = v.object({
  peers: v.array(
    v.object({
      remoteClusterId: clusterId(),
      remoteClusterName: v.optional(clusterName()),
      tenantNamespace: namespace,
    }),
  ),
});

export class PeersFileError extends Error {
  override name = "PeersFileError";
}

/** Parses the peers file's text; the cluster name defaults to the ID when the ID is a DNS label. */
export function parsePeers(text: string, source = "peers file"): Peer[] {
  let raw: unknown;
  try {
    raw = Bun.YAML.parse(text);
  } catch (err) {
    throw new PeersFileError(`${source} is not valid YAML: ${(err as Error).message}`);
  }
  // An empty file, or `peers:` with nothing under it, means no peers.
  if (raw === null || raw === undefined) raw = { peers: [] };
  if (typeof raw === "object" && !Array.isArray(raw) && (raw as { peers?: unknown }).peers === null)
    raw = { ...raw, peers: [] };
  const parsed = v.safeParse(PeersFile, raw);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const at = issue.path?.map((p) => p.key).join(".") ?? "";
    throw new PeersFileError(
      `${source}: ${at ? at + ": " : ""}${issue.message}; expected peers: [{remoteClusterId, remoteClusterName, tenantNamespace}]`,
    );
  }
  const seen = new Set<string>();
  return parsed.output.peers.map((p, i) => {
    if (seen.has(p.remoteClusterId))
      throw new PeersFileError(
        `${source}: peers.${i}: cluster ${p.remoteClusterId} is listed twice; list each peer once`,
      );
    seen.add(p.remoteClusterId);
    const name = p.remoteClusterName ?? p.remoteClusterId;
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)) {
      throw new PeersFileError(
        `${source}: peers.${i}: remoteClusterName is required when remoteClusterId (${p.remoteClusterId}) is not a DNS label`,
      );
    }
    return { remoteClusterId: p.remoteClusterId, remoteClusterName: name, tenantNamespace: p.tenantNamespace };
  });
}
