// The host namespaces a pod spec asks for: the webhook refuses a pod that could only run where they
// are not available, and the pod offloader drops them from the remote pod (and says so).
const HOST_NAMESPACES = ["hostNetwork", "hostPID", "hostIPC"] as const;

/** The host namespaces a pod asks for (hostNetwork, hostPID, hostIPC set to true). */
export function hostNamespacesAsked(spec: Record<string, unknown>): string[] {
  return HOST_NAMESPACES.filter((f) => spec[f] === true);
}
