// What the cluster must offer before liqoctl installs anything: a recent enough Kubernetes and the
// admission APIs the chart and the roles rely on. The auth service applies a
// ValidatingAdmissionPolicy at start-up (admissionregistration.k8s.io/v1, GA in 1.30) and the chart
// ships a MutatingWebhookConfiguration; on an older cluster the install would fail late, after a
// Helm timeout, with an error that does not say why.
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { CliError, ExitCode } from "../errors.ts";

export const MIN_KUBERNETES = { major: 1, minor: 30 };
export const ADMISSION_GROUP_VERSION = "admissionregistration.k8s.io/v1";
/** The admission resources liqo uses, and what for. */
export const ADMISSION_RESOURCES: Record<string, string> = {
  validatingadmissionpolicies: "the auth service's ValidatingAdmissionPolicy",
  validatingadmissionpolicybindings: "its binding",
  mutatingwebhookconfigurations: "the pod webhook (tolerations and affinity of offloaded pods)",
};

/** The fields of GET /version that matter here. */
export interface ServerVersion {
  major?: string;
  minor?: string;
  gitVersion?: string;
}

export interface ClusterFacts {
  version: ServerVersion;
  /** Resources served in admissionregistration.k8s.io/v1; undefined when that group version is not served. */
  admissionResources?: readonly string[];
}

/** major.minor of a server version; providers add suffixes ("30+" on EKS/GKE), gitVersion is the fallback. */
export function parseVersion(v: ServerVersion): { major: number; minor: number } | undefined {
  const major = parseInt(v.major ?? "", 10);
  const minor = parseInt(v.minor ?? "", 10);
  if (Number.isFinite(major) && Number.isFinite(minor)) return { major, minor };
  const m = /^v?(\d+)\.(\d+)/.exec(v.gitVersion ?? "");
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** Pure: why liqo cannot be installed on this cluster, one line each; empty when it can. */
export function requirementProblems(facts: ClusterFacts): string[] {
  const problems: string[] = [];
  const min = `${MIN_KUBERNETES.major}.${MIN_KUBERNETES.minor}`;
  const found = facts.version.gitVersion || `${facts.version.major ?? "?"}.${facts.version.minor ?? "?"}`;
  const v = parseVersion(facts.version);
  // An unreadable version (a development build) is let through: the API check below still holds.
  if (v && (v.major < MIN_KUBERNETES.major || (v.major === MIN_KUBERNETES.major && v.minor < MIN_KUBERNETES.minor)))
    problems.push(
      `Kubernetes ${found} is too old: liqo needs ${min} or later (ValidatingAdmissionPolicy in ${ADMISSION_GROUP_VERSION} is GA from ${min})`,
    );
  if (!facts.admissionResources)
    problems.push(`the API server does not serve ${ADMISSION_GROUP_VERSION}, which liqo's admission objects use`);
  else
    for (const [resource, why] of Object.entries(ADMISSION_RESOURCES))
      if (!facts.admissionResources.includes(resource))
        problems.push(`${ADMISSION_GROUP_VERSION} does not serve ${resource}, needed by ${why}`);
  return problems;
}

/** Reads the server's version and admission resources. */
export async function clusterFacts(client: Pick<KubeClient, "request">): Promise<ClusterFacts> {
  const version = await client.request<ServerVersion>("GET", "/version");
  try {
    const list = await client.request<{ resources?: { name: string }[] }>("GET", `/apis/${ADMISSION_GROUP_VERSION}`);
    return { version, admissionResources: (list.resources ?? []).map((r) => r.name) };
  } catch (err) {
    if (err instanceof KubeApiError && err.notFound) return { version };
    throw err;
  }
}

/** Refuses, before anything is written, a cluster liqo cannot run on. */
export async function checkClusterRequirements(client: Pick<KubeClient, "request">): Promise<void> {
  const problems = requirementProblems(await clusterFacts(client));
  if (problems.length === 0) return;
  throw new CliError(
    [
      "liqo cannot be installed on this cluster:",
      ...problems,
      `fix: upgrade the cluster to Kubernetes ${MIN_KUBERNETES.major}.${MIN_KUBERNETES.minor} or later, with ${ADMISSION_GROUP_VERSION} served (not turned off by the API server's --runtime-config); nothing was installed`,
    ].join("\n  "),
    ExitCode.Failure,
  );
}
