// liqoctl plugin install|list|remove: the cluster's drop-in reflector plugins (allow|disallow, the
// chart values they need: plugin-allow.ts). A plugin is
// validated here exactly as the engine will (validate.ts, in a worker under a deadline) and judged
// as a provider will judge it (auth/plugin-rbac.ts, on this cluster's discovery) before anything is
// stored; a refused plugin leaves the store as it was. Stored, it warns when liqo's controller
// manager may not read a kind (chart value reflection.pluginRules). The controller manager hot-loads what is
// stored into every peering (docs/plugins.md, "Install into a peering"; docs/reflection.md, "The plugin store in a cluster").
import { defineCommand } from "citty";
import { ResourceRequestResource, type ResourceRequest } from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { decidePluginGrants } from "../../core/peering/auth/plugin-rbac.ts";
import {
  MAX_PLUGIN_BYTES,
  kindsOf,
  listStoredPlugins,
  pluginConfigMap,
  pluginConfigMapName,
  PLUGIN_LABEL,
  type StoredPlugin,
} from "../../core/reflection/store/configmap.ts";
import { validatePlugin } from "../../core/reflection/validate.ts";
import { CliError, ExitCode } from "../errors.ts";
import { kubeFlags } from "../peering.ts";
import { warn } from "../ui.ts";
import { table } from "../table.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const client = (args: { kubeconfig?: string; context?: string }) =>
  createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
const mib = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MiB`;

const install = defineCommand({
  meta: {
    name: "install",
    description:
      "Validate a drop-in reflector plugin and store it in the cluster: every peering's virtual kubelet loads it",
  },
  args: {
    plugin: { type: "positional", description: "the .wasm file", required: true },
    name: { type: "string", description: "the name to store it under (default: its manifest's name)" },
    ...kubeFlags,
  },
  async run({ args }) {
    const ns = args["liqo-namespace"];
    const file = Bun.file(args.plugin);
    if (!(await file.exists()))
      throw new CliError(
        `${args.plugin}: no such file; pass the .wasm your plugin's build wrote (liqoctl plugin build; see docs/plugins.md)`,
      );
    if (file.size > MAX_PLUGIN_BYTES) {
      throw new CliError(
        `${args.plugin} is ${mib(file.size)}: a plugin is stored in a ConfigMap, and Kubernetes limits a ConfigMap's data to 1 MiB. ` +
          `Build it smaller (asc -O3 --noAssert, no --debug; keep large tables out of the module); nothing was stored`,
        ExitCode.Failure,
      );
    }
    const bytes = await file.bytes();
    const verdict = await validatePlugin(bytes, { label: args.plugin });
    if (!verdict.ok) {
      throw new CliError(
        `${args.plugin} is not a valid reflector plugin, nothing was stored:\n  ${verdict.problems.join("\n  ")}\n` +
          `Check it with liqoctl plugin validate ${args.plugin} and liqoctl plugin test ${args.plugin} --input <object>`,
        ExitCode.Failure,
      );
    }
    const m = verdict.manifest;
    const name = args.name ?? m.name;
    if (!DNS_LABEL.test(name))
      throw new CliError(`--name ${name}: a plugin name must be a DNS label ([a-z0-9-], at most 63 characters)`);
    const kube = client(args);
    // The same judgement a provider makes (on its own discovery): refused here, it would be refused there.
    const [judged] = await decidePluginGrants(kube, [{ name: m.name, version: m.version, resources: m.resources }]);
    if (judged!.grant.state !== "Granted") {
      throw new CliError(
        `${args.plugin} (${m.name}) cannot be installed, nothing was stored: ${judged!.grant.message}`,
        ExitCode.Failure,
      );
    }
    const stored = (await listStoredPlugins(kube, ns)).filter(
      (s): s is StoredPlugin => !("error" in s) && s.name !== name,
    );
    for (const s of stored) {
      const other = s.manifest;
      if (!other) continue;
      const clash =
        other.name === m.name
          ? `the same plugin name ${m.name}`
          : other.resources.find((r) => m.resources.some((x) => x.kind === r.kind && x.group === r.group))?.kind;
      if (clash) {
        throw new CliError(
          `${args.plugin} (${m.name}) clashes with plugin ${s.name} (ConfigMap ${ns}/${s.configMap}) on ${clash}: one kind has one reflector. ` +
            `Remove it first (liqoctl plugin remove ${s.name}) or install this one under its name (--name ${s.name}) to replace it; nothing was stored`,
          ExitCode.Failure,
        );
      }
    }
    const cm = pluginConfigMap(ns, name, bytes, m);
    try {
      await kube.apply(Resources.configMaps, cm, { fieldManager: "liqoctl", force: true });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404)
        throw new CliError(
          `namespace ${ns} does not exist: is liqo installed here (liqoctl install), or is it in another namespace (--liqo-namespace)?`,
          ExitCode.Failure,
        );
      if (err instanceof KubeApiError && (err.status === 413 || /too long|too large|exceed/i.test(err.message))) {
        throw new CliError(
          `the API server refused ConfigMap ${ns}/${cm.metadata.name} as too large (${err.message}): Kubernetes limits a ConfigMap to 1 MiB; build the plugin smaller`,
          ExitCode.Failure,
        );
      }
      throw err;
    }
    console.log(
      `plugin ${name} installed: ${m.name} ${m.version}, reflects ${kindsOf(m).join(", ")}; stored in ConfigMap ${ns}/${cm.metadata.name} (${bytes.length} bytes).`,
    );
    console.log(`Every peering loads it once its provider grants these kinds: see liqoctl plugin list.`);
    for (const line of await controllerManagerCannotRead(kube, ns, m.resources)) warn(line);
  },
});

// The chart's controller manager reads a plugin's kinds with its own rights (reflection.pluginRules):
// without them the peerings load the plugin and reflect nothing, with only a log line in its pod.
const CONTROLLER_MANAGER_SA = "liqo-controller-manager";
const READ_VERBS = ["get", "list", "watch"];
const SARs = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SubjectAccessReview",
  plural: "subjectaccessreviews",
  namespaced: false,
};

/** One warning per kind liqo's controller manager may not read here; none when liqo is not installed by the chart. */
async function controllerManagerCannotRead(
  kube: KubeClient,
  ns: string,
  kinds: { group: string; version: string; kind: string }[],
): Promise<string[]> {
  const user = `system:serviceaccount:${ns}:${CONTROLLER_MANAGER_SA}`;
  const out: string[] = [];
  try {
    if (!(await kube.find(Resources.serviceAccounts, CONTROLLER_MANAGER_SA, ns))) return [];
    for (const k of kinds) {
      const ref = await kube.resourceFor(k.group ? `${k.group}/${k.version}` : k.version, k.kind);
      const denied: string[] = [];
      for (const verb of READ_VERBS) {
        const review = await kube.create<KubeObject & { status?: { allowed?: boolean } }>(SARs, {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          metadata: {},
          spec: {
            user,
            groups: ["system:serviceaccounts", `system:serviceaccounts:${ns}`],
            resourceAttributes: { verb, group: k.group, resource: ref.plural },
          },
        } as KubeObject);
        if (review.status?.allowed !== true) denied.push(verb);
      }
      if (!denied.length) continue;
      const resource = k.group ? `${ref.plural}.${k.group}` : ref.plural;
      out.push(
        `liqo's controller manager (ServiceAccount ${ns}/${CONTROLLER_MANAGER_SA}) may not ${denied.join(", ")} ${resource}: peerings load the plugin but reflect no ${k.kind} until it may. ` +
          `Allow it: liqoctl plugin allow ${resource} (it adds the kind to the chart value reflection.pluginRules); no restart is needed`,
      );
    }
  } catch {
    return out; // the check is advice: a user who may not create SubjectAccessReviews gets none
  }
  return out;
}

/** Per plugin name: "cluster: Granted|Refused (message)" from our ResourceRequests' status (the providers' answers). */
async function peerAnswers(kube: KubeClient): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  let rrs: (ResourceRequest & KubeObject)[] = [];
  try {
    rrs = (
      await kube.list<ResourceRequest & KubeObject>(ResourceRequestResource, {
        labelSelector: "liqo.io/replication=true",
      })
    ).items;
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err; // no CRDs: no peering
  }
  for (const rr of rrs) {
    const peer = rr.metadata.labels?.["liqo.io/remote-cluster-id"] ?? rr.metadata.namespace!;
    const answered = new Map((rr.status?.reflectorPlugins ?? []).map((g) => [g.name, g]));
    for (const p of rr.spec?.reflectorPlugins ?? []) {
      const g = answered.get(p.name);
      const line = g
        ? `${peer}: ${g.state}${g.state === "Refused" ? ` (${g.message})` : ""}`
        : `${peer}: waiting for the provider's answer`;
      out.set(p.name, [...(out.get(p.name) ?? []), line]);
    }
  }
  return out;
}

const list = defineCommand({
  meta: {
    name: "list",
    description: "List the drop-in reflector plugins stored in the cluster, and what each peering's provider answered",
  },
  args: { ...kubeFlags, output: { type: "string", alias: "o", description: "table (default) or json" } },
  async run({ args }) {
    const ns = args["liqo-namespace"];
    const kube = client(args);
    const stored = await listStoredPlugins(kube, ns);
    const answers = await peerAnswers(kube);
    const rows = await Promise.all(
      stored.map(async (s) => {
        if ("error" in s) return { name: s.configMap, configMap: s.configMap, error: s.error };
        // ConfigMaps made by the chart carry no manifest annotation: read it from the module (in a worker).
        let manifest = s.manifest;
        let error: string | undefined;
        if (!manifest) {
          const v = await validatePlugin(s.bytes, { label: `ConfigMap ${ns}/${s.configMap}` });
          if (v.ok) manifest = v.manifest;
          else error = v.problems.join("; ");
        }
        return {
          name: s.name,
          configMap: s.configMap,
          plugin: manifest?.name,
          version: manifest?.version,
          kinds: manifest ? kindsOf(manifest) : [],
          bytes: s.bytes.length,
          peerings: answers.get(manifest?.name ?? s.name) ?? [],
          error,
        };
      }),
    );
    if (args.output === "json") return console.log(JSON.stringify(rows, null, 2));
    if (!rows.length)
      return console.log(`No reflector plugins installed in namespace ${ns} (liqoctl plugin install <file.wasm>).`);
    const t = [["NAME", "PLUGIN", "VERSION", "KINDS", "SIZE", "PEERINGS"]];
    for (const r of rows) {
      t.push([
        r.name,
        r.plugin ?? "-",
        r.version ?? "-",
        (r.kinds ?? []).join(", ") || "-",
        r.bytes ? `${r.bytes}B` : "-",
        (r.peerings ?? []).map((p) => p.replace(/ \(.*$/, "")).join("; ") || "-",
      ]);
    }
    const notes = rows.flatMap((r) => [
      ...(r.error ? [`  ${r.name}: rejected: ${r.error}`] : []),
      ...(r.peerings ?? []).filter((p) => p.includes("Refused")).map((p) => `  ${r.name}: ${p}`),
    ]);
    console.log(table(t) + (notes.length ? `\n\nProblems:\n${notes.join("\n")}` : ""));
  },
});

const remove = defineCommand({
  meta: {
    name: "remove",
    description:
      "Remove a drop-in reflector plugin: every virtual kubelet stops it, providers revoke its rights and delete its copies",
  },
  args: {
    name: { type: "positional", description: "the plugin's name (see liqoctl plugin list)", required: true },
    ...kubeFlags,
  },
  async run({ args }) {
    const ns = args["liqo-namespace"];
    const kube = client(args);
    const cmName = pluginConfigMapName(args.name);
    const cm = await kube.find(Resources.configMaps, cmName, ns);
    // Also by the label, for a ConfigMap the chart or a user named otherwise.
    const found =
      cm?.metadata.labels?.[PLUGIN_LABEL] === "true"
        ? cm
        : ((
            await kube.list(Resources.configMaps, {
              namespace: ns,
              labelSelector: `${PLUGIN_LABEL}=true,liqo.io/reflector-plugin-name=${args.name}`,
            })
          ).items[0] ??
          (await kube
            .find(Resources.configMaps, args.name, ns)
            .then((c) => (c?.metadata.labels?.[PLUGIN_LABEL] === "true" ? c : undefined))));
    if (!found) {
      const names = (await listStoredPlugins(kube, ns)).map((s) => ("error" in s ? s.configMap : s.name));
      throw new CliError(
        `no reflector plugin named ${args.name} is installed in namespace ${ns} (installed: ${names.join(", ") || "none"}); see liqoctl plugin list`,
        ExitCode.Failure,
      );
    }
    if (found.metadata.labels?.["app.kubernetes.io/managed-by"] === "Helm") {
      console.error(
        `warning: ConfigMap ${ns}/${found.metadata.name} comes from the chart (reflection.plugins): remove it from your values too, or the next helm upgrade brings it back`,
      );
    }
    await kube.delete(Resources.configMaps, found.metadata.name!, ns, { uid: found.metadata.uid });
    console.log(
      `plugin ${args.name} removed (ConfigMap ${ns}/${found.metadata.name} deleted): every peering stops it, and each provider revokes its rights and deletes the copies it reflected.`,
    );
  },
});

export const storeCommands = { install, list, remove };
