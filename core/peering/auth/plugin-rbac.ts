// What a consumer's drop-in reflector plugins may touch on this (provider) cluster. The consumer
// lists its plugins and their kinds in its ResourceRequest (spec.reflectorPlugins); the provider
// decides here, on its own discovery, what its peer identity gets: exactly the verbs reflection
// needs, on exactly the kinds a plugin declares, only in the peer's twin namespaces (a ClusterRole
// per peer that is only ever bound by RoleBindings in them). A peer's request is untrusted input.
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import type { ResourceRef } from "../../kube/resources.ts";
import type { ReflectorPluginGrant, ReflectorPluginRequest } from "../../apis/index.ts";

/** Forward reflection lists and watches the peer's copies, creates and updates them by server-side apply (patch) and deletes them. */
export const FORWARD_VERBS = ["get", "list", "watch", "create", "patch", "delete"];
/** Backward reflection only reads the peer's objects (it writes on the consumer). */
export const BACKWARD_VERBS = ["get", "list", "watch"];

export const verbsFor = (direction: string) => (direction === "backward" ? BACKWARD_VERBS : FORWARD_VERBS);

/** Bounds on what a peer may ask for, so a hostile request cannot make the provider do unbounded work. */
export const MAX_PLUGINS = 16;
export const MAX_RESOURCES_PER_PLUGIN = 8;

const BUILTIN = "is reflected by the built-in %s reflector (one kind has one reflector): a plugin cannot reflect it";
const POD_MAKERS =
  "creates Pods, which a peer may only run through ShadowPods (the provider enforces their limits there)";

/**
 * Kinds no plugin is granted, by "group/plural", with the reason shown to the user. Namespaced kinds
 * only: cluster-scoped ones are refused before this list is read.
 */
export const DENIED: Record<string, string> = {
  "/secrets": BUILTIN.replace("%s", "secrets") + "; a peer may not read the provider's Secrets",
  "/configmaps": BUILTIN.replace("%s", "configmaps"),
  "/services": BUILTIN.replace("%s", "services"),
  "discovery.k8s.io/endpointslices": BUILTIN.replace("%s", "endpointslices"),
  "networking.k8s.io/ingresses": BUILTIN.replace("%s", "ingresses"),
  "/persistentvolumeclaims": BUILTIN.replace("%s", "storage"),
  "/pods":
    "Pods are offloaded through ShadowPods, which the provider enforces; a plugin may not create or read them directly",
  "/serviceaccounts":
    "ServiceAccounts are identities: a peer may not mint identities (and their tokens) on the provider",
  "rbac.authorization.k8s.io/roles": "RBAC: a peer may not grant itself rights",
  "rbac.authorization.k8s.io/rolebindings": "RBAC: a peer may not grant itself rights",
  "authorization.k8s.io/localsubjectaccessreviews": "a peer may not probe the provider's authorization",
  "/resourcequotas": "quotas are the provider's limits on the peer",
  "/limitranges": "limit ranges are the provider's limits on the peer",
  "/replicationcontrollers": POD_MAKERS,
  "apps/deployments": POD_MAKERS,
  "apps/replicasets": POD_MAKERS,
  "apps/statefulsets": POD_MAKERS,
  "apps/daemonsets": POD_MAKERS,
  "batch/jobs": POD_MAKERS,
  "batch/cronjobs": POD_MAKERS,
  "/events": "Events are written by each cluster's own controllers",
};

export interface GrantedResource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  verbs: string[];
}

export interface PluginDecision {
  grant: ReflectorPluginGrant;
  /** The resources granted (empty when refused). */
  resources: GrantedResource[];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Why the provider refuses one requested kind, or its resolved resource when it does not. */
async function judgeResource(
  client: KubeClient,
  r: { group: string; version: string; kind: string },
): Promise<{ ref: ResourceRef } | { refused: string }> {
  const apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
  const what = `${r.kind} (${apiVersion})`;
  if (typeof r.kind !== "string" || !/^[A-Za-z][A-Za-z0-9]*$/.test(r.kind))
    return { refused: `${JSON.stringify(r.kind)} is not a kind name` };
  if (r.group.endsWith("liqo.io"))
    return { refused: `${what} is one of liqo's own kinds: peering objects are not reflected by plugins` };
  let ref: ResourceRef;
  try {
    ref = await client.resourceFor(apiVersion, r.kind);
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) {
      return {
        refused: `${what} is not served as a resource by this cluster (not installed here, or a subresource such as pods/exec, which is never granted); install its CRD on the provider first`,
      };
    }
    throw err;
  }
  if (!ref.namespaced)
    return {
      refused: `${what} is cluster-scoped: a peer may only reflect namespaced kinds, into its own twin namespaces`,
    };
  const denied = DENIED[`${ref.group}/${ref.plural}`];
  if (denied) return { refused: `${what}: ${denied}` };
  return { ref };
}

/** The provider's answer for each plugin the consumer asked for: all of a plugin's kinds, or none. */
export async function decidePluginGrants(
  client: KubeClient,
  requested: ReflectorPluginRequest[] | undefined,
): Promise<PluginDecision[]> {
  const out: PluginDecision[] = [];
  const list = requested ?? [];
  for (const [i, p] of list.entries()) {
    const name = String(p?.name ?? "");
    const refuse = (message: string) =>
      out.push({ grant: { name: name || `#${i}`, state: "Refused", message }, resources: [] });
    if (i >= MAX_PLUGINS) {
      refuse(`more than ${MAX_PLUGINS} plugins requested; only the first ${MAX_PLUGINS} are considered`);
      continue;
    }
    if (!DNS_LABEL.test(name)) {
      refuse(`plugin name ${JSON.stringify(name)} is not a DNS label`);
      continue;
    }
    if (out.some((o) => o.grant.name === name)) {
      refuse(`plugin ${name} is listed twice`);
      continue;
    }
    const resources = Array.isArray(p.resources) ? p.resources : [];
    if (!resources.length || resources.length > MAX_RESOURCES_PER_PLUGIN) {
      refuse(`plugin ${name} must declare 1 to ${MAX_RESOURCES_PER_PLUGIN} kinds, not ${resources.length}`);
      continue;
    }
    const problems: string[] = [];
    const granted: GrantedResource[] = [];
    for (const r of resources) {
      const verdict = await judgeResource(client, r);
      if ("refused" in verdict) problems.push(verdict.refused);
      else
        granted.push({
          group: verdict.ref.group,
          version: verdict.ref.version,
          kind: verdict.ref.kind,
          plural: verdict.ref.plural,
          verbs: verbsFor(r.direction),
        });
    }
    const taken = out.flatMap((o) => o.resources.map((g) => ({ g, by: o.grant.name })));
    for (const g of granted) {
      const other = taken.find((t) => t.g.group === g.group && t.g.plural === g.plural);
      if (other) problems.push(`${g.kind} is already reflected by plugin ${other.by}`);
    }
    if (problems.length) {
      refuse(
        `plugin ${name} refused: ${problems.join("; ")}. Remove the plugin (liqoctl plugin remove ${name}) or change its manifest`,
      );
      continue;
    }
    const rules = granted.map((g) => ({ apiGroups: [g.group], resources: [g.plural], verbs: g.verbs }));
    out.push({
      grant: {
        name,
        state: "Granted",
        message: `granted ${granted.map((g) => `${g.verbs.join(",")} on ${g.plural}${g.group ? "." + g.group : ""}`).join("; ")} in the peer's twin namespaces`,
        rules,
      },
      resources: granted,
    });
  }
  return out;
}
