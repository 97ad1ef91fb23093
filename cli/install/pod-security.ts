// The Pod Security level of the liqo namespace. The gateway is privileged and the route agent uses
// the host network: a namespace under `baseline` or `restricted` refuses both pods and the install
// only fails at Helm's timeout. liqoctl labels the namespace itself, before Helm, rather than through
// a Namespace in the chart: Helm's --create-namespace makes an unlabelled namespace it does not own,
// and never touches its labels again, so the label survives `helm upgrade`, and `helm uninstall`
// does not delete the namespace with the user's objects in it.
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { CliError, ExitCode } from "../errors.ts";

export const POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce";
/** What the gateway (privileged) and the route agent (hostNetwork) need. */
export const POD_SECURITY_LEVEL = "privileged";
const WHY = "the gateway runs privileged and the route agent on the host network";

export type PodSecurityStep = { do: "create" } | { do: "label"; previous?: string } | { do: "nothing" };

/** Pure: what the namespace (undefined: it does not exist) needs for liqo's pods to be admitted. */
export function podSecurityStep(ns: KubeObject | undefined): PodSecurityStep {
  if (!ns) return { do: "create" };
  const current = ns.metadata.labels?.[POD_SECURITY_ENFORCE];
  if (current === POD_SECURITY_LEVEL) return { do: "nothing" };
  return current === undefined ? { do: "label" } : { do: "label", previous: current };
}

/** The command that does by hand what liqoctl could not. */
export function labelCommand(namespace: string): string {
  return `kubectl label namespace ${namespace} ${POD_SECURITY_ENFORCE}=${POD_SECURITY_LEVEL} --overwrite`;
}

/** Pure: why the label could not be set, and the fix. */
export function podSecurityRefusal(namespace: string, step: PodSecurityStep, cause: string): string {
  const what = step.do === "create" ? `create namespace ${namespace} with` : `label namespace ${namespace}`;
  return [
    `cannot ${what} ${POD_SECURITY_ENFORCE}=${POD_SECURITY_LEVEL}: ${cause}`,
    `  liqo needs Pod Security level "${POD_SECURITY_LEVEL}" there: ${WHY}, which "baseline" and "restricted" refuse`,
    `  fix: have a cluster administrator run \`${labelCommand(namespace)}\``,
    "  (or exempt the namespace in the API server's PodSecurity admission configuration), then rerun liqoctl install",
  ].join("\n");
}

/** Creates or labels the namespace; answers a line to show, or refuses with the reason and the fix. */
export async function ensurePodSecurity(
  client: Pick<KubeClient, "find" | "create" | "mergePatch">,
  namespace: string,
): Promise<string | undefined> {
  let step: PodSecurityStep = { do: "label" };
  try {
    step = podSecurityStep(await client.find(Resources.namespaces, namespace));
    const labels = { [POD_SECURITY_ENFORCE]: POD_SECURITY_LEVEL };
    if (step.do === "nothing") return undefined;
    if (step.do === "create") {
      await client.create(Resources.namespaces, { metadata: { name: namespace, labels } });
      return `namespace ${namespace} created with ${POD_SECURITY_ENFORCE}=${POD_SECURITY_LEVEL} (${WHY})`;
    }
    await client.mergePatch(Resources.namespaces, namespace, undefined, { metadata: { labels } });
    const was = step.previous ? `, was ${step.previous}` : "";
    return `namespace ${namespace} labelled ${POD_SECURITY_ENFORCE}=${POD_SECURITY_LEVEL}${was} (${WHY})`;
  } catch (err) {
    // Unreachable servers are reported as everywhere else; refusals (RBAC, a policy) get the fix.
    if (!(err instanceof KubeApiError) || err.status === 0 || err.status >= 500) throw err;
    throw new CliError(podSecurityRefusal(namespace, step, err.message), ExitCode.Failure);
  }
}
