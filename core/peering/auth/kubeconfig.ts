// The kubeconfig handed to a remote cluster: this cluster's API server, its CA, and the peer's token.

export interface PeerKubeconfigInput {
  /** The name of the cluster issuing it (the context and cluster entry are named after it). */
  clusterName: string;
  apiServerUrl: string;
  /** PEM of the CA that signs the API server's certificate; omitted when the server has a public one. */
  apiServerCa?: string;
  token: string;
  namespace: string;
  userName: string;
}

/** A kubeconfig as YAML (JSON is valid YAML, and needs no YAML writer). */
export function peerKubeconfig(i: PeerKubeconfigInput): string {
  const cluster: Record<string, string> = { server: i.apiServerUrl };
  if (i.apiServerCa) cluster["certificate-authority-data"] = Buffer.from(i.apiServerCa).toString("base64");
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: i.clusterName, cluster }],
      users: [{ name: i.userName, user: { token: i.token } }],
      contexts: [
        { name: i.clusterName, context: { cluster: i.clusterName, user: i.userName, namespace: i.namespace } },
      ],
      "current-context": i.clusterName,
    },
    null,
    2,
  );
}
