// Which way MCS flows with each peer: a per-ForeignCluster annotation over the controller's
// default (`--mcs-peer-policy`, chart value mcs.peerPolicy). Pure.
export const MCS_POLICY_ANNOTATION = "mcs.liqo.io/peer-policy";

export const PEER_POLICIES = ["ExportAndImport", "ExportOnly", "ImportOnly", "None"] as const;
export type PeerPolicy = (typeof PEER_POLICIES)[number];

export interface Flow {
  /** Our exports go to the peer. */
  export: boolean;
  /** The peer's exports become ServiceImports here. */
  import: boolean;
}

export function isPeerPolicy(s: string): s is PeerPolicy {
  return (PEER_POLICIES as readonly string[]).includes(s);
}

/** The flow with one peer; an unknown annotation value is reported and treated as None (nothing leaks by a typo). */
export function flowOf(
  annotations: Record<string, string> | undefined,
  fallback: PeerPolicy,
): Flow & { policy: PeerPolicy; invalid?: string } {
  const raw = annotations?.[MCS_POLICY_ANNOTATION];
  const policy: PeerPolicy = raw === undefined ? fallback : isPeerPolicy(raw) ? raw : "None";
  const flow = {
    policy,
    export: policy === "ExportAndImport" || policy === "ExportOnly",
    import: policy === "ExportAndImport" || policy === "ImportOnly",
  };
  return raw !== undefined && !isPeerPolicy(raw)
    ? {
        ...flow,
        invalid: `${MCS_POLICY_ANNOTATION}="${raw}" is not one of ${PEER_POLICIES.join(", ")}; treated as None`,
      }
    : flow;
}
