// The cluster's CoreDNS forwards clusterset.local to liqo (docs/mcs.md, "DNS"): a server block
// between two marker comments in the Corefile of ConfigMap kube-system/coredns, written by
// `liqoctl install`, removed by `liqoctl uninstall`. Stock CoreDNS has no multicluster plugin (it is
// an external one), so liqo answers the zone itself and CoreDNS only forwards, as Submariner's
// Lighthouse does. The edit is a pure function of the Corefile; the I/O around it is small.
import { createHash } from "node:crypto";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";

export const BEGIN_MARKER =
  "# BEGIN liqo clusterset.local (liqoctl install writes this block, liqoctl uninstall removes it)";
export const END_MARKER = "# END liqo clusterset.local";
export const CLUSTERSET_DNS_SERVICE = "liqo-clusterset-dns";
const COREDNS = { namespace: "kube-system", configMap: "coredns", deployment: "coredns" };
/** The pod template annotation that restarts CoreDNS when its Corefile has no reload plugin. */
export const RESTART_ANNOTATION = "liqo.io/corefile-sha256";

export const clustersetBlock = (ip: string) =>
  [
    BEGIN_MARKER,
    "clusterset.local:53 {",
    "    errors",
    // The responder's TTLs: 5 s, and 1 s for NXDOMAIN/NODATA. CoreDNS' cache keeps any answer at
    // least 5 s unless told (its MINTTL): measured with CoreDNS 1.14, a name asked for before its
    // export resolved 5.1 s after the import with plain `cache 5`, 1.4 s with this.
    "    cache 5 {",
    "        denial 9984 1 1",
    "    }",
    `    forward . ${ip}`,
    "}",
    END_MARKER,
  ].join("\n");

export type CorefileEdit = { ok: true; corefile: string; changed: boolean } | { ok: false; problem: string };

/** The Corefile without our block (and the blank line before it), whatever IP it names. */
export function withoutClustersetBlock(corefile: string): { corefile: string; changed: boolean } {
  const begin = corefile.indexOf(BEGIN_MARKER);
  if (begin < 0) return { corefile, changed: false };
  const endAt = corefile.indexOf(END_MARKER, begin);
  // A begin marker with no end (cut by hand): everything from the marker to the block's closing brace.
  const stop = endAt >= 0 ? endAt + END_MARKER.length : closingBrace(corefile, begin);
  const head = corefile.slice(0, begin).replace(/\n+$/, "\n");
  const tail = corefile.slice(stop).replace(/^\n+/, "");
  const out = head === "\n" ? tail : head + tail;
  return { corefile: out, changed: out !== corefile };
}

/** Just past the brace that closes the first block after `from` (nested blocks counted). */
function closingBrace(text: string, from: number): number {
  let depth = 0;
  for (let i = text.indexOf("{", from); i >= 0 && i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return i + 1;
  }
  return text.length;
}

/** Strips comments, so that braces and names inside them do not count. */
const code = (corefile: string) => corefile.replace(/#[^\n]*/g, "");

/** Why the Corefile cannot be edited safely, or undefined. */
export function corefileProblem(corefile: string): string | undefined {
  const c = code(corefile);
  if (!c.trim()) return "the Corefile is empty";
  let depth = 0;
  for (const ch of c) {
    if (ch === "{") depth++;
    else if (ch === "}" && --depth < 0) return "the Corefile has a } without its {";
  }
  if (depth !== 0) return "the Corefile has a { without its }";
  if (!c.includes("{")) return "the Corefile has no server block";
  return undefined;
}

/** Whether a server block other than ours already serves clusterset.local (a user's, or another MCS implementation's). */
export function foreignClustersetBlock(corefile: string): boolean {
  const c = code(withoutClustersetBlock(corefile).corefile);
  let depth = 0;
  let key = "";
  for (const ch of c) {
    if (ch === "{") {
      if (depth === 0 && /(^|[\s,])(dns:\/\/)?clusterset\.local\.?(:\d+)?(?=$|[\s,])/.test(key.trim())) return true;
      depth++;
      key = "";
    } else if (ch === "}") {
      depth--;
      key = "";
    } else if (depth === 0) key += ch;
  }
  return false;
}

/** The Corefile with our block forwarding clusterset.local to `ip`, replacing any earlier one of ours. */
export function withClustersetBlock(corefile: string, ip: string): CorefileEdit {
  const problem = corefileProblem(corefile);
  if (problem) return { ok: false, problem };
  if (foreignClustersetBlock(corefile))
    return { ok: false, problem: "the Corefile already has a clusterset.local server block that liqo did not write" };
  const base = withoutClustersetBlock(corefile).corefile.replace(/\s+$/, "");
  const out = `${base}\n\n${clustersetBlock(ip)}\n`;
  return { ok: true, corefile: out, changed: out !== corefile };
}

/** Whether CoreDNS re-reads this Corefile by itself (the reload plugin in some server block). */
export const hasReload = (corefile: string) => /^\s*reload(\s|$)/m.test(code(corefile));

export const corefileDigest = (corefile: string) => createHash("sha256").update(corefile).digest("hex").slice(0, 16);

const byHand = (ip: string) =>
  `add this server block to your cluster DNS by hand (CoreDNS: the Corefile), then restart it:\n${clustersetBlock(ip)}`;

type ConfigMap = KubeObject & { data?: Record<string, string> };

/**
 * Writes our block into kube-system/coredns and restarts CoreDNS when it will not reload by itself.
 * Returns what to tell the user; throws only for errors of the API server other than not found.
 */
export async function configureClusterDns(
  client: KubeClient,
  liqoNamespace: string,
): Promise<{ level: "info" | "warn"; message: string }> {
  const svc = await client.find<KubeObject & { spec?: { clusterIP?: string } }>(
    Resources.services,
    CLUSTERSET_DNS_SERVICE,
    liqoNamespace,
  );
  const ip = svc?.spec?.clusterIP;
  if (!ip || ip === "None")
    return {
      level: "warn",
      message: `Service ${liqoNamespace}/${CLUSTERSET_DNS_SERVICE} has no ClusterIP (controllerManager.clustersetDns.enabled=false?): the cluster DNS does not forward clusterset.local`,
    };
  const cm = await client.find<ConfigMap>(Resources.configMaps, COREDNS.configMap, COREDNS.namespace);
  const corefile = cm?.data?.Corefile;
  if (!cm || corefile === undefined)
    return {
      level: "warn",
      message: `no Corefile in ConfigMap ${COREDNS.namespace}/${COREDNS.configMap} (not CoreDNS, or not configured there): clusterset.local names do not resolve until you ${byHand(ip)}`,
    };
  const edit = withClustersetBlock(corefile, ip);
  if (!edit.ok)
    return {
      level: "warn",
      message: `ConfigMap ${COREDNS.namespace}/${COREDNS.configMap}: ${edit.problem}; left unchanged. To resolve clusterset.local names through liqo, ${byHand(ip)}`,
    };
  if (!edit.changed) return { level: "info", message: `the cluster DNS already forwards clusterset.local to ${ip}` };
  await writeCorefile(client, cm, edit.corefile);
  const restarted = await restartUnlessReload(client, edit.corefile);
  return {
    level: "info",
    message: `the cluster DNS (${COREDNS.namespace}/${COREDNS.configMap}) forwards clusterset.local to ${CLUSTERSET_DNS_SERVICE} (${ip})${restarted}`,
  };
}

/** Removes our block, if there, and restarts CoreDNS when it will not reload by itself. */
export async function unconfigureClusterDns(client: KubeClient): Promise<string | undefined> {
  const cm = await client.find<ConfigMap>(Resources.configMaps, COREDNS.configMap, COREDNS.namespace);
  const corefile = cm?.data?.Corefile;
  if (!cm || corefile === undefined) return undefined;
  const edit = withoutClustersetBlock(corefile);
  if (!edit.changed) return undefined;
  await writeCorefile(client, cm, edit.corefile);
  const restarted = await restartUnlessReload(client, edit.corefile);
  return `the cluster DNS no longer forwards clusterset.local${restarted}`;
}

async function writeCorefile(client: KubeClient, cm: ConfigMap, corefile: string) {
  // PUT with the resourceVersion read: a concurrent edit of the Corefile fails this write instead of being lost.
  try {
    await client.replace(Resources.configMaps, { ...cm, data: { ...cm.data, Corefile: corefile } });
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 409)
      throw new Error(
        `ConfigMap ${COREDNS.namespace}/${COREDNS.configMap} changed while liqoctl edited it: run the command again`,
        { cause: err },
      );
    throw err;
  }
}

async function restartUnlessReload(client: KubeClient, corefile: string): Promise<string> {
  if (hasReload(corefile)) return " (CoreDNS reloads it within a minute or two: its reload plugin)";
  const d = await client.find(Resources.deployments, COREDNS.deployment, COREDNS.namespace);
  if (!d)
    return `; no reload plugin and no Deployment ${COREDNS.namespace}/${COREDNS.deployment} to restart: restart your cluster DNS for it to take effect`;
  await client.mergePatch(Resources.deployments, COREDNS.deployment, COREDNS.namespace, {
    spec: { template: { metadata: { annotations: { [RESTART_ANNOTATION]: corefileDigest(corefile) } } } },
  });
  return ` (Deployment ${COREDNS.namespace}/${COREDNS.deployment} restarted: its Corefile has no reload plugin)`;
}
