// Which way MCS flows with each peer: a per-ForeignCluster annotation over the controller's
// default (`--mcs-peer-policy`, chart value mcs.peerPolicy). Pure.
export const MCS_POLICY_ANNOTATION = "mcs.liqo.io/peer-policy";
/** Optional, per ForeignCluster: the only namespaces whose services are exchanged with that peer (comma-separated). */
export const MCS_NAMESPACES_ANNOTATION = "mcs.liqo.io/namespaces";

export const PEER_POLICIES = ["ExportAndImport", "ExportOnly", "ImportOnly", "None"] as const;
export type PeerPolicy = (typeof PEER_POLICIES)[number];

export interface Flow {
  /** Our exports go to the peer. */
  export: boolean;
  /** The peer's exports become ServiceImports here. */
  import: boolean;
  /** When set, only these namespaces are exchanged with the peer, both ways. */
  namespaces?: string[];
}

/** Whether a namespace's services are exchanged with the peer. */
export const covers = (flow: Flow, namespace: string) => !flow.namespaces || flow.namespaces.includes(namespace);

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
  const flow: Flow & { policy: PeerPolicy } = {
    policy,
    export: policy === "ExportAndImport" || policy === "ExportOnly",
    import: policy === "ExportAndImport" || policy === "ImportOnly",
  };
  const scope = annotations?.[MCS_NAMESPACES_ANNOTATION];
  if (scope !== undefined)
    flow.namespaces = scope
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean);
  return raw !== undefined && !isPeerPolicy(raw)
    ? {
        ...flow,
        invalid: `${MCS_POLICY_ANNOTATION}="${raw}" is not one of ${PEER_POLICIES.join(", ")}; treated as None`,
      }
    : flow;
}
