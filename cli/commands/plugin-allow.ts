// liqoctl plugin allow|disallow <kind>: one command per side to turn plugin support on for a kind,
// and off again. On the consumer, `allow` lets liqo's controller manager read the kind (chart value
// reflection.pluginRules); on the provider, `allow --grant` also lets it grant peers' plugins
// (reflection.grantPeerPlugins) and delete the copies of a revoked one. Both change the installed
// release's values through the path `liqoctl install` takes on an installed release: `helm get
// values`, only these values changed (shown first), `helm upgrade --atomic` (a failure keeps the
// old values). The values edit is cli/install/plugin-rules.ts; docs/plugins.md, section 5.
import { defineCommand } from "citty";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import type { KubeObject } from "../../core/kube/resources.ts";
import { GRANTED_ANNOTATION } from "../../core/peering/auth/plugin-grants.ts";
import type { GrantedResource } from "../../core/peering/auth/plugin-rbac.ts";
import { decidePluginGrants } from "../../core/peering/auth/plugin-rbac.ts";
import { ClusterRoles, REMOTE_SA_PREFIX } from "../../core/peering/auth/rbac.ts";
import { DISCOVERY_CLUSTER_ID_LABEL } from "../../core/apis/labels.ts";
import { listStoredPlugins } from "../../core/reflection/store/configmap.ts";
import { validatePlugin } from "../../core/reflection/validate.ts";
import { CliError, ExitCode } from "../errors.ts";
import { findHelm, releaseStatus, releaseValues, type HelmTarget } from "../install/helm.ts";
import {
  allowKind,
  disallowKind,
  isLiqoctlRule,
  resolveKind,
  resourceName,
  RULE_VERBS,
  type Edit,
  type ServedResource,
} from "../install/plugin-rules.ts";
import { RELEASE, upgradeRelease } from "../install/upgrade-release.ts";
import { kubeFlags } from "../peering.ts";
import { info, parseDuration } from "../ui.ts";

const releaseFlags = {
  ...kubeFlags,
  timeout: { type: "string", default: "5m", description: "how long Helm may take; once expired it rolls back" },
  "local-chart-path": {
    type: "string",
    description: "upgrade with the chart in this directory instead of the one built into liqoctl",
  },
  verbose: { type: "boolean", alias: "v", description: "print the values and Helm's output" },
} as const;

type Flags = { kubeconfig?: string; context?: string; "liqo-namespace": string; timeout: string; verbose?: boolean };

/** Every namespaced and cluster-scoped resource the cluster serves, at each group's preferred version. */
async function servedResources(kube: KubeClient): Promise<ServedResource[]> {
  type List = {
    resources: {
      name: string;
      singularName?: string;
      kind: string;
      namespaced: boolean;
      shortNames?: string[];
    }[];
  };
  const groups = await kube.request<{ groups: { name: string; preferredVersion: { version: string } }[] }>(
    "GET",
    "/apis",
  );
  const lists = await Promise.all([
    kube.request<List>("GET", "/api/v1").then((l) => ({ group: "", version: "v1", l })),
    ...groups.groups.map((g) =>
      kube
        .request<List>("GET", `/apis/${g.name}/${g.preferredVersion.version}`)
        .then((l) => ({ group: g.name, version: g.preferredVersion.version, l }))
        // An aggregated API that is down must not hide the others (kubectl api-resources warns likewise).
        .catch(() => ({ group: g.name, version: g.preferredVersion.version, l: { resources: [] } as List })),
    ),
  ]);
  return lists.flatMap(({ group, version, l }) =>
    l.resources
      .filter((r) => !r.name.includes("/"))
      .map((r) => ({
        group,
        version,
        kind: r.kind,
        plural: r.name,
        singular: r.singularName || r.kind.toLowerCase(),
        shortNames: r.shortNames,
        namespaced: r.namespaced,
      })),
  );
}

const label = (r: ServedResource) => `${r.kind} (${resourceName(r)})`;

/** The release's values, or why there is no release to change. */
async function installedRelease(target: HelmTarget): Promise<{ helm: string; values: Record<string, unknown> }> {
  const helm = findHelm();
  if (!(await releaseStatus(helm, RELEASE, target)))
    throw new CliError(
      `liqo is not installed in namespace ${target.namespace} (no Helm release ${RELEASE} there): install it first (liqoctl install), or name its namespace (--liqo-namespace)`,
      ExitCode.Failure,
    );
  return { helm, values: await releaseValues(helm, RELEASE, target) };
}

/** Shows the edit, then upgrades the release with it; says so when there is nothing to change. */
async function apply(args: Flags, helm: string, target: HelmTarget, edit: Edit): Promise<boolean> {
  for (const n of edit.notes) info(n);
  if (!edit.changes.length) {
    info("nothing to change: the release keeps its values");
    return false;
  }
  let timeoutMs: number;
  try {
    timeoutMs = parseDuration(args.timeout, "timeout");
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  info(`liqo is installed in namespace ${target.namespace}: its values stay, except\n  ${edit.changes.join("\n  ")}`);
  const yaml = `# liqo chart values: the release's, changed by liqoctl plugin\n${Bun.YAML.stringify(edit.values, null, 2)}\n`;
  if (args.verbose) process.stderr.write(yaml);
  await upgradeRelease({
    helm,
    target,
    yaml,
    chartPath: (args as Record<string, unknown>)["local-chart-path"] as string | undefined,
    previous: true,
    timeoutMs,
    timeoutText: args.timeout,
    verbose: args.verbose === true,
  });
  return true;
}

const setup = (args: Flags) => ({
  kube: createKubeClient({ kubeconfig: args.kubeconfig, context: args.context }),
  target: { kubeconfig: args.kubeconfig, context: args.context, namespace: args["liqo-namespace"] },
});

export const allow = defineCommand({
  meta: {
    name: "allow",
    description:
      "Let liqo's controller manager read a kind for reflector plugins (consumer); with --grant, also grant it to peers' plugins (provider). Upgrades the liqo release",
  },
  args: {
    kind: {
      type: "positional",
      description:
        "the kind: PodDisruptionBudget, poddisruptionbudgets, pdb, or with its group (Kind.group, resource.group)",
      required: true,
    },
    grant: {
      type: "boolean",
      description:
        "on a provider: grant peers' reflector plugins the kinds this cluster accepts (chart value reflection.grantPeerPlugins)",
    },
    ...releaseFlags,
  },
  async run({ args }) {
    const { kube, target } = setup(args as Flags);
    let ref: ServedResource;
    try {
      ref = resolveKind(args.kind, await servedResources(kube));
    } catch (err) {
      if (err instanceof KubeApiError) throw err;
      throw new CliError(`liqoctl plugin allow ${args.kind}: ${(err as Error).message}`);
    }
    // The judgement a provider makes, on this cluster's discovery: refused here, refused there.
    const [judged] = await decidePluginGrants(kube, [
      {
        name: "allow",
        version: "0",
        resources: [{ group: ref.group, version: ref.version, kind: ref.kind, direction: "forward" }],
      },
    ]);
    if (judged!.grant.state !== "Granted") {
      const why = (judged!.grant.message ?? "")
        .replace(/^plugin allow refused: /, "")
        .replace(/\. Remove the plugin .*$/s, "");
      throw new CliError(
        `liqoctl plugin allow ${args.kind}: a provider would refuse it: ${why}; no plugin may reflect it, nothing changed`,
      );
    }
    const { helm, values } = await installedRelease(target);
    const changed = await apply(args as Flags, helm, target, allowKind(values, ref, { grant: args.grant === true }));
    const what = args.grant
      ? `peers' reflector plugins may be granted ${label(ref)} here, and liqo's controller manager may ${RULE_VERBS.join(", ")} it (to delete the copies of a revoked plugin)`
      : `liqo's controller manager may ${RULE_VERBS.join(", ")} ${label(ref)}: a plugin for it reflects once its provider grants it (liqoctl plugin install <file.wasm>; liqoctl plugin list shows the answer)`;
    console.log(`${changed ? "" : "already: "}${what}.`);
  },
});

/** What uses the kind here: stored plugins reflecting it (consumer), peers' plugins granted it (provider). */
async function usesOf(kube: KubeClient, ns: string, r: { group: string; plural: string; kind: string }) {
  const out: string[] = [];
  for (const s of await listStoredPlugins(kube, ns)) {
    if ("error" in s) continue;
    let manifest = s.manifest;
    if (!manifest) {
      const v = await validatePlugin(s.bytes, { label: `ConfigMap ${ns}/${s.configMap}` });
      if (!v.ok) continue;
      manifest = v.manifest;
    }
    if (manifest.resources.some((x) => x.group === r.group && x.kind === r.kind))
      out.push(
        `plugin ${s.name} (ConfigMap ${ns}/${s.configMap}) reflects it: remove it first (liqoctl plugin remove ${s.name})`,
      );
  }
  let roles: KubeObject[] = [];
  try {
    roles = (await kube.list(ClusterRoles)).items.filter(
      (c) => c.metadata.name?.startsWith(REMOTE_SA_PREFIX) && c.metadata.annotations?.[GRANTED_ANNOTATION],
    );
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 403)) throw err;
    info("you may not list ClusterRoles: whether peers' plugins hold this kind here was not checked");
  }
  for (const role of roles) {
    let granted: GrantedResource[] = [];
    try {
      granted = JSON.parse(role.metadata.annotations![GRANTED_ANNOTATION]!);
    } catch {}
    if (!granted.some((g) => g.group === r.group && g.plural === r.plural)) continue;
    const peer = role.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL] ?? role.metadata.name;
    const plugins = role.metadata.annotations?.["liqo.io/reflector-plugins"] || "a plugin";
    out.push(
      `peer ${peer}'s ${plugins} holds it here (ClusterRole ${role.metadata.name}): without the rule its copies could not be deleted, without granting its rights could not be revoked; ` +
        `that peer removes the plugin first (liqoctl plugin remove on it), then this provider revokes the rights and deletes the copies`,
    );
  }
  return out;
}

export const disallow = defineCommand({
  meta: {
    name: "disallow",
    description:
      "Undo liqoctl plugin allow: remove the kind's rule from the liqo release (and stop granting peers' plugins with the last one). Refused while a plugin uses the kind",
  },
  args: {
    kind: { type: "positional", description: "the kind, as given to liqoctl plugin allow", required: true },
    ...releaseFlags,
  },
  async run({ args }) {
    const { kube, target } = setup(args as Flags);
    const served = await servedResources(kube);
    let ref: { group: string; plural: string; kind: string };
    try {
      ref = resolveKind(args.kind, served);
    } catch (err) {
      // A kind no longer served (its CRD removed) can still be disallowed by resource.group.
      const { values } = await installedRelease(target);
      const reflection = (values.reflection ?? {}) as { pluginRules?: unknown[] };
      const rule = (reflection.pluginRules ?? []).find((x) => {
        const g = (x as { apiGroups?: string[] }).apiGroups?.[0] ?? "";
        const p = (x as { resources?: string[] }).resources?.[0] ?? "";
        return isLiqoctlRule(x, { group: g, plural: p }) && resourceName({ group: g, plural: p }) === args.kind;
      }) as { apiGroups: string[]; resources: string[] } | undefined;
      if (!rule) throw new CliError(`liqoctl plugin disallow ${args.kind}: ${(err as Error).message}`);
      ref = { group: rule.apiGroups[0]!, plural: rule.resources[0]!, kind: "" };
    }
    const uses = ref.kind ? await usesOf(kube, args["liqo-namespace"], ref) : [];
    if (uses.length)
      throw new CliError(
        `liqoctl plugin disallow ${args.kind}: ${resourceName(ref)} is in use here, nothing changed:\n  ${uses.join("\n  ")}`,
        ExitCode.Failure,
      );
    const { helm, values } = await installedRelease(target);
    const edit = disallowKind(values, ref);
    const changed = await apply(args as Flags, helm, target, edit);
    if (changed)
      console.log(
        `liqo's controller manager no longer holds ${resourceName(ref)} through liqoctl's rule${edit.changes.some((c) => c.startsWith("reflection.grantPeerPlugins")) ? ", and peers' plugins are no longer granted" : ""}.`,
      );
  },
});
