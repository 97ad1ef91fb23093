// liqoctl info: Liqo 1.x's name for what liqoctl status shows, with what 1.x's adds for scripts and
// for one peer: `--get <path>` prints one field of the status document, and `info peer <name>...`
// narrows the document to those peerings (their virtual nodes, plugins and quotas).
import { defineCommand } from "citty";
import { createKubeClient } from "../../core/kube/client.ts";
import { CliError } from "../errors.ts";
import { liqoKubeFlags } from "../peering.ts";
import { statusDocument, type StatusDocument } from "../status-data.ts";
import { peeringsText, pluginsText, statusText, virtualNodesText } from "../status-text.ts";
import { readStatusInputs, statusOutput } from "./status.ts";

/** The value at a dotted path of the document (array items by index), or a CliError naming what is there. */
export function fieldAt(doc: unknown, path: string): unknown {
  if (!path.trim()) throw new CliError("--get needs a field path, e.g. --get clusterIdentity.id");
  let here: unknown = doc;
  const walked: string[] = [];
  for (const key of path.split(".")) {
    const fields =
      here && typeof here === "object" ? (Array.isArray(here) ? here.map((_, i) => String(i)) : Object.keys(here)) : [];
    if (!fields.includes(key)) {
      const at = walked.length ? walked.join(".") : "the document";
      throw new CliError(
        `--get ${path}: ${at} has no field ${JSON.stringify(key)}` +
          (fields.length ? `; its fields: ${fields.join(", ")}` : ` (it is ${JSON.stringify(here)})`),
      );
    }
    here = (here as Record<string, unknown>)[key];
    walked.push(key);
  }
  return here;
}

/** A field as a script wants it: strings and numbers bare, anything else as JSON. */
export function fieldText(value: unknown): string {
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === null) return "null";
  return JSON.stringify(value, null, 2);
}

/** The document narrowed to some peerings, by ForeignCluster name or cluster ID; unknown ones refused. */
export function peersDocument(doc: StatusDocument, names: string[]) {
  const peerings = doc.peerings.filter((p) => names.includes(p.name) || (p.clusterID && names.includes(p.clusterID)));
  const unknown = names.filter((n) => !peerings.some((p) => p.name === n || p.clusterID === n));
  if (unknown.length)
    throw new CliError(
      `no peering ${unknown.join(", ")}; peerings here: ${doc.peerings.map((p) => `${p.name} (${p.clusterID ?? "no ID"})`).join(", ") || "none"}`,
    );
  const ids = new Set(peerings.map((p) => p.clusterID));
  const named = new Set(peerings.map((p) => p.name));
  return {
    peerings,
    virtualNodes: doc.virtualNodes.filter((v) => ids.has(v.clusterID)),
    reflectorPlugins: doc.reflectorPlugins.filter((p) => named.has(p.peer)),
    quotas: doc.quotas.peerings.filter((q) => named.has(q.peering)),
  };
}

export default defineCommand({
  meta: {
    name: "info",
    description:
      "Show liqo's installation, its health and peerings (as status does), one field of them (--get), or some peerings (info peer NAME...)",
  },
  args: {
    what: {
      type: "positional",
      required: false,
      description: "peer, followed by peerings' names or cluster IDs: show only those",
    },
    ...liqoKubeFlags,
    output: {
      type: "string",
      alias: "o",
      description: "output format: text (default), json or yaml",
    },
    get: {
      type: "string",
      description:
        "print one field of the status document by its path, e.g. clusterIdentity.id, installation.version, peerings.0.outgoing",
    },
  },
  async run({ args }) {
    const output = statusOutput(args.output);
    const [what, ...names] = (args._ ?? []).map(String);
    if (what !== undefined && what !== "peer")
      throw new CliError(`liqoctl info ${what}: unknown; use liqoctl info, or liqoctl info peer NAME...`);
    if (what === "peer" && !names.length)
      throw new CliError("liqoctl info peer needs the peerings' names or cluster IDs (liqoctl status lists them)");
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const doc = statusDocument(await readStatusInputs(client, args["liqo-namespace"]));
    const shown = what === "peer" ? peersDocument(doc, names) : doc;
    if (args.get !== undefined) {
      console.log(fieldText(fieldAt(shown, args.get)));
      return;
    }
    if (output === "json") console.log(JSON.stringify(shown, null, 2));
    else if (output === "yaml") console.log(Bun.YAML.stringify(shown, null, 2).trimEnd());
    else if (what === "peer") {
      const p = shown as ReturnType<typeof peersDocument>;
      console.log(
        [peeringsText(p.peerings), virtualNodesText(p.virtualNodes), pluginsText(p.reflectorPlugins)].join("\n\n"),
      );
    } else console.log(statusText(doc));
  },
});
