// Offloaded pods on real nodes, beyond the quick start, on one in-cluster quick start (liqo installed
// with liqoctl on two real-node clusters, peered, liqo-demo offloaded; rome installed with
// --reflection-policy secrets=opt-in):
// - API server support: a pod offloaded from rome to milan that calls the Kubernetes API with its
//   ServiceAccount token reaches rome's API server (what operators and sidecars expect), as in Liqo
//   v0.5: a real container in milan runs curl with the mounted token; a projected token with an
//   audience of its own is minted by rome for that audience;
// - Events come home (Liqo 1.x): an image pull error and a crash loop in milan show on the local
//   pods in rome, an Event storm in milan stays bounded, nothing echoes;
// - reflection policies (Liqo 1.x): set at install, shown by liqoctl status, changed at run time
//   (applied to what is already reflected), an unknown kind refused;
// - a reflector plugin written outside the repository (liqoctl plugin init, bun install, liqoctl
//   plugin build: PodDisruptionBudgets) installed on rome with liqoctl, its kind allowed there with
//   liqoctl plugin allow: refused by milan with the fix (liqoctl plugin allow ... --grant), shown by
//   liqoctl plugin list and status; once milan ran it, rome's in-cluster virtual kubelet hot-loads the
//   plugin; an update reaches milan; removed, milan revokes the rights and deletes the copy; then
//   liqoctl plugin disallow on both sides gives the releases back their values.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ResourceRequestResource, type ResourceRequest } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { PLUGIN_BINDING, pluginClusterRoleName } from "../../core/peering/auth/plugin-grants.ts";
import { FORWARD_VERBS } from "../../core/peering/auth/plugin-rbac.ts";
import { ClusterRoles, RoleBindings } from "../../core/peering/auth/rbac.ts";
import { findTenantNamespace, remoteServiceAccountName } from "../../core/peering/auth/tenant.ts";
import { PLUGIN_LABEL } from "../../core/reflection/store/configmap.ts";
import { clusterViews } from "../../core/roles/admin-views-cluster.ts";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import {
  API_SERVER_SUPPORT_ANNOTATION,
  remoteTokenSecretName,
  SERVICE_ACCOUNT_MOUNT,
} from "../../core/virtualkubelet/pods/forge.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, reapOrphanRigs, rigDown } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { liqoctl } from "../quickstart/install.ts";
import { findHelm, releaseValues } from "../../cli/install/helm.ts";
import { RELEASE } from "../../cli/install/upgrade-release.ts";
import { pluginCli, scaffoldPluginProject } from "../support/plugin-project.ts";
import { waitFor } from "../support/wait.ts";
import { pdb, PDBS } from "../support/pdb.ts";
import { kubectlOn } from "../support/kubectl.ts";

// biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
type Pod = KubeObject & { spec?: Record<string, any>; status?: { phase?: string } };

const NS = "liqo-demo";
const onVirtualNode = {
  nodeSelector: { "liqo.io/type": "virtual-node" },
  tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
};

// Every few seconds, the API answers between markers in the log: a ConfigMap it may read, and who
// the API server says the caller is (kubectl auth whoami's request).
const CLIENT_SCRIPT = `
SA=${SERVICE_ACCOUNT_MOUNT}
URL=https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
api() { curl -sS --max-time 5 --cacert $SA/ca.crt -H "Authorization: Bearer $(cat $SA/token)" "$@"; }
while true; do
  echo "=== address $URL"
  echo "=== configmap"; api "$URL/api/v1/namespaces/$(cat $SA/namespace)/configmaps/greeting"
  echo "=== whoami"; api -X POST -H "Content-Type: application/json" \\
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' "$URL/apis/authentication.k8s.io/v1/selfsubjectreviews"
  echo "=== end"
  sleep 3
done`;

/** The last complete round of CLIENT_SCRIPT's output: the address and the two answers, parsed. */
// biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
function lastRound(log: string): { address: string; configMap: any; whoami: any } | undefined {
  const rounds = log
    .split("=== address ")
    .slice(1)
    .filter((r) => r.includes("=== end"));
  const last = rounds.at(-1);
  if (!last) return undefined;
  const section = (name: string, next: string) =>
    last.slice(last.indexOf(`=== ${name}\n`) + name.length + 5, last.indexOf(`=== ${next}`));
  try {
    return {
      address: last.slice(0, last.indexOf("\n")),
      configMap: JSON.parse(section("configmap", "whoami")),
      whoami: JSON.parse(section("whoami", "end")),
    };
  } catch {
    return undefined; // an error message, not an answer: wait for the next round
  }
}

let q: InClusterQuickstart;

// The controller managers' rights on PodDisruptionBudgets come from liqoctl plugin allow (chart
// value reflection.pluginRules): rome reads what it reflects; milan (allow --grant) grants peers'
// plugins and lists and deletes the copies of a revoked one.
/** Each release's values before liqoctl plugin allow touched them. */
const valuesBefore: Record<string, Record<string, unknown>> = {};
let romeAllowed: { out: string; err: string; code: number };
const releaseValuesOf = (cluster: string) =>
  releaseValues(findHelm(), RELEASE, { kubeconfig: q.kubeconfig(cluster), namespace: "liqo" });
await ensureBuilt(["networkpolicy"]);

/** The PodDisruptionBudget plugin as an author makes it, outside the repository: its .wasm and the folder to remove. */
async function buildPdbPlugin(): Promise<{ parent: string; wasm: string; built: string }> {
  const parent = mkdtempSync(join(tmpdir(), "liqo-pdb-plugin-"));
  const dir = await scaffoldPluginProject(parent, "pdbs", "policy/v1/PodDisruptionBudget");
  const built = await pluginCli(dir, "build");
  return { parent, wasm: join(dir, "build/pdbs.wasm"), built: `${built.code} ${built.out}${built.err}` };
}
let pdbPlugin: ReturnType<typeof buildPdbPlugin>;

const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);

/** liqoctl on a cluster as a user runs it: what it printed and its exit code. */
async function liqoctlOn(cluster: string, ...args: string[]) {
  const proc = Bun.spawn([...liqoctl, ...args, `--kubeconfig=${q.kubeconfig(cluster)}`], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { out, err, code: await proc.exited };
}

/** The remote copy of a local pod of liqo-demo, Running in milan. */
async function remotePod(name: string): Promise<Pod> {
  return waitFor(
    `${name} Running in milan`,
    async () => {
      const pods = await q.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" });
      const p = pods.items.find((x) => x.metadata.name === name);
      return p?.status?.phase === "Running" ? p : undefined;
    },
    { timeoutMs: 180_000 },
  );
}

beforeAll(async () => {
  await reapOrphanRigs(testRigRoot);
  const dir = mkdtempSync(join(testRigRoot, "api-access-"));
  process.on("exit", () => {
    if (q) killRigNow(q.rig);
  });
  // Built while the clusters start (the plugin test awaits it); a failure is reported there.
  pdbPlugin = buildPdbPlugin();
  pdbPlugin.catch(() => {});
  q = await runInClusterQuickstart({
    dir,
    owner: process.pid,
    romeInstallArgs: ["--reflection-policy=secrets=opt-in"],
    progress: process.env.RIG_VERBOSE ? (m) => console.error(`[api-access] ${m}`) : undefined,
  });
  console.log(
    `in-cluster quick start: ${Object.entries(q.timings)
      .map(([k, v]) => `${k} ${v.toFixed(0)}s`)
      .join(", ")}`,
  );
  // Plugin support on the consumer, as docs/plugins.md §5 says: one command (milan's is run by the
  // plugin test, as the fix its refusal names). Before the other tests: an upgrade re-renders the chart.
  valuesBefore.rome = await releaseValuesOf("rome");
  valuesBefore.milan = await releaseValuesOf("milan");
  romeAllowed = await liqoctlOn("rome", "plugin", "allow", "PodDisruptionBudget");
  if (romeAllowed.code !== 0) throw new Error(`liqoctl plugin allow on rome: ${romeAllowed.out}${romeAllowed.err}`);
  // In rome: a ServiceAccount that may read ConfigMaps of liqo-demo, and one to read.
  await q.rome.create(Resources.serviceAccounts, { metadata: { name: "reader", namespace: NS } } as KubeObject);
  await q.rome.create(Resources.roles, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "configmap-reader", namespace: NS },
    rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
  } as KubeObject);
  await q.rome.create(Resources.roleBindings, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "reader", namespace: NS },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "configmap-reader" },
    subjects: [{ kind: "ServiceAccount", name: "reader", namespace: NS }],
  } as KubeObject);
  await q.rome.create(Resources.configMaps, {
    metadata: { name: "greeting", namespace: NS },
    data: { message: "hello from rome" },
  } as KubeObject);
}, 1_200_000);

afterAll(async () => {
  await pdbPlugin?.then(
    (p) => rmSync(p.parent, { recursive: true, force: true }),
    () => {},
  );
  if (q) await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}, 120_000);

describe("an offloaded pod calls its origin cluster's API server with its ServiceAccount", () => {
  test("curl in the container in milan with the mounted token: rome's ConfigMap, as rome's system:serviceaccount:liqo-demo:reader", async () => {
    await q.rome.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "api-client", namespace: NS },
      spec: {
        ...onVirtualNode,
        serviceAccountName: "reader",
        containers: [
          {
            name: "client",
            image: rigImageRefs.hello,
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", CLIENT_SCRIPT],
          },
        ],
      },
    } as KubeObject);
    const remote = await remotePod("api-client");
    let log = "";
    const round = await waitFor(
      "an answer from rome's API server in the container's log",
      async () => {
        const r = await kubectl("milan", "logs", "-n", remote.metadata.namespace!, "api-client", "--tail=200");
        log = r.out + r.err;
        const last = lastRound(r.out);
        return last?.configMap.kind === "ConfigMap" && last.whoami.kind === "SelfSubjectReview" ? last : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 2000, describe: () => log.slice(-1500) },
    );
    const romeC = q.rig.clusters[0]!;
    expect(round.address).toBe(`https://${q.rig.network!.gateway}:${romeC.ports.apiserver}`);
    const local = await q.rome.get(Resources.configMaps, "greeting", NS);
    // rome's object itself, not the copy reflected into milan's twin namespace.
    expect(round.configMap.metadata.uid).toBe(local.metadata.uid);
    expect(round.configMap.metadata.namespace).toBe(NS);
    expect(round.configMap.data).toEqual({ message: "hello from rome" });
    expect(round.whoami.status.userInfo.username).toBe(`system:serviceaccount:${NS}:reader`);
    const localPod = await q.rome.get(Resources.pods, "api-client", NS);
    // Bound to the local pod: the token dies with it.
    expect(round.whoami.status.userInfo.extra["authentication.kubernetes.io/pod-uid"]).toEqual([localPod.metadata.uid]);
  }, 420_000);

  test("the provider's token is not mounted; the origin one is, from a Secret owned by the ShadowPod", async () => {
    const remote = await remotePod("api-client");
    expect(remote.spec!.automountServiceAccountToken).toBe(false);
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    const tokenVolumes = remote.spec!.volumes.filter((v: any) =>
      // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
      v.projected?.sources?.some((s: any) => s.serviceAccountToken),
    );
    expect(tokenVolumes).toEqual([]);
    const secretName = remoteTokenSecretName("api-client");
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    expect(remote.spec!.volumes.filter((v: any) => v.secret?.secretName === secretName).length).toBe(1);
    const secret = await q.milan.get<KubeObject & { data: Record<string, string> }>(
      Resources.secrets,
      secretName,
      remote.metadata.namespace!,
    );
    expect(secret.metadata.ownerReferences?.map((r) => r.kind)).toEqual(["ShadowPod"]);
    expect(Buffer.from(secret.data.namespace!, "base64").toString()).toBe(NS);
  }, 240_000);

  test("opted out with the annotation: no token at all, the provider's address", async () => {
    await q.rome.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "no-api", namespace: NS, annotations: { [API_SERVER_SUPPORT_ANNOTATION]: "disabled" } },
      spec: {
        ...onVirtualNode,
        serviceAccountName: "reader",
        containers: [
          {
            name: "client",
            image: rigImageRefs.hello,
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", `ls ${SERVICE_ACCOUNT_MOUNT} 2>&1; echo "host=$KUBERNETES_SERVICE_HOST"; sleep 3600`],
          },
        ],
      },
    } as KubeObject);
    const remote = await remotePod("no-api");
    expect(remote.spec!.containers[0].volumeMounts ?? []).toEqual([]);
    expect(remote.spec!.containers[0].env ?? []).toEqual([]);
    let log = "";
    await waitFor(
      "the container's report",
      async () => {
        log = (await kubectl("milan", "logs", "-n", remote.metadata.namespace!, "no-api")).out;
        return log.includes("host=") ? log : undefined;
      },
      { timeoutMs: 120_000, describe: () => log },
    );
    expect(log).toContain("No such file or directory");
    expect(log).not.toContain(`host=${q.rig.network!.gateway}`);
  }, 240_000);

  test("a projected token of its own (audience vault, 15 minutes): minted by rome for that audience, bound to the local pod, read in milan at its path", async () => {
    await q.rome.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "vault-client", namespace: NS },
      spec: {
        ...onVirtualNode,
        serviceAccountName: "reader",
        automountServiceAccountToken: false,
        volumes: [
          {
            name: "vault",
            projected: {
              sources: [
                { serviceAccountToken: { audience: "vault", expirationSeconds: 900, path: "vault-token" } },
                { configMap: { name: "greeting", items: [{ key: "message", path: "message" }] } },
              ],
            },
          },
        ],
        containers: [
          {
            name: "client",
            image: rigImageRefs.hello,
            imagePullPolicy: "IfNotPresent",
            command: ["sleep", "3600"],
            volumeMounts: [{ name: "vault", mountPath: "/var/run/vault" }],
          },
        ],
      },
    } as KubeObject);
    const remote = await remotePod("vault-client");
    // The provider's kubelet mints nothing: no token source of its own in the copy.
    expect(JSON.stringify(remote.spec!.volumes)).not.toContain("serviceAccountToken");
    const read = async (file: string) =>
      (
        await kubectl(
          "milan",
          "exec",
          "-n",
          remote.metadata.namespace!,
          "vault-client",
          "--",
          "cat",
          `/var/run/vault/${file}`,
        )
      ).out;
    expect(await read("message")).toBe("hello from rome");
    const token = (await read("vault-token")).trim();
    const local = await q.rome.get(Resources.pods, "vault-client", NS);
    type Review = {
      status: {
        authenticated?: boolean;
        audiences?: string[];
        user?: { username?: string; extra?: Record<string, string[]> };
      };
    };
    const review = (audiences?: string[]) =>
      q.rome.request<Review>("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
        body: {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenReview",
          spec: { token, ...(audiences ? { audiences } : {}) },
        },
      });
    const forVault = await review(["vault"]);
    expect(forVault.status.authenticated).toBe(true);
    expect(forVault.status.audiences).toEqual(["vault"]);
    expect(forVault.status.user?.username).toBe(`system:serviceaccount:${NS}:reader`);
    expect(forVault.status.user?.extra?.["authentication.kubernetes.io/pod-uid"]).toEqual([local.metadata.uid!]);
    // Audience-bound: rome's API server itself does not take it.
    expect((await review()).status.authenticated).toBeFalsy();
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());
    expect(claims.exp - claims.iat).toBe(900);
    await q.rome.delete(Resources.pods, "vault-client", NS, { gracePeriodSeconds: 0 });
  }, 300_000);

  test("the token Secret goes with the pod", async () => {
    const remote = await remotePod("api-client");
    await q.rome.delete(Resources.pods, "api-client", NS, { gracePeriodSeconds: 0 });
    await waitFor(
      "the token Secret deleted in milan",
      async () =>
        !(await q.milan.find(Resources.secrets, remoteTokenSecretName("api-client"), remote.metadata.namespace!)),
      { timeoutMs: 120_000 },
    );
  }, 180_000);
});

type Ev = KubeObject & {
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  involvedObject: { kind?: string; name?: string; namespace?: string; uid?: string };
  source?: { component?: string; host?: string };
};
const REFLECTED = "liqo.io/managed-by=event-reflection";

/** The provider's copy of a local pod of liqo-demo, in any phase. */
async function remoteCopy(name: string): Promise<Pod> {
  return waitFor(
    `the copy of ${name} in milan`,
    async () => {
      const pods = await q.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" });
      return pods.items.find((x) => x.metadata.name === name);
    },
    { timeoutMs: 180_000 },
  );
}

/** Events on an object (by uid, as kubectl describe selects them); reflected ones only when asked. */
async function eventsOf(client: typeof q.rome, ns: string, uid: string, reflected = false): Promise<Ev[]> {
  return (
    await client.list<Ev>(Resources.events, {
      namespace: ns,
      fieldSelector: `involvedObject.uid=${uid}`,
      labelSelector: reflected ? REFLECTED : undefined,
    })
  ).items;
}

function offloadedPod(name: string, container: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: { ...onVirtualNode, containers: [{ name: "main", imagePullPolicy: "IfNotPresent", ...container }] },
  } as KubeObject;
}

/** An Event in milan about a copy, as any controller there would write it. */
function milanEvent(copy: Pod, name: string, reason: string, component: string): KubeObject {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name, namespace: copy.metadata.namespace },
    involvedObject: {
      apiVersion: "v1",
      kind: "Pod",
      name: copy.metadata.name,
      namespace: copy.metadata.namespace,
      uid: copy.metadata.uid,
    },
    reason,
    message: `${reason} ${name}`,
    type: "Warning",
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component },
  } as KubeObject;
}

describe("Events of offloaded pods come home", () => {
  test("an image milan cannot pull: the Events on rome's pod, and kubectl describe pod in rome says why it is not running", async () => {
    await q.rome.create(Resources.pods, offloadedPod("bad-image", { image: "ghcr.io/liqo-bun/no-such-image:0.0.0" }));
    const local = await q.rome.get(Resources.pods, "bad-image", NS);
    await remoteCopy("bad-image");
    let seen: Ev[] = [];
    const failed = await waitFor(
      "a reflected pull failure on the local pod",
      async () => {
        seen = await eventsOf(q.rome, NS, local.metadata.uid!, true);
        return seen.find((e) => /no-such-image/.test(e.message ?? "") && e.type === "Warning");
      },
      { timeoutMs: 240_000, intervalMs: 1000, describe: () => seen.map((e) => `${e.reason}: ${e.message}`) },
    );
    expect(failed.involvedObject).toMatchObject({
      kind: "Pod",
      name: "bad-image",
      namespace: NS,
      uid: local.metadata.uid,
    });
    expect(failed.source?.component).toBe("kubelet");
    expect(failed.source?.host).toEndWith("(milan)");
    const described = await kubectl("rome", "describe", "pod", "-n", NS, "bad-image");
    expect(described.code).toBe(0);
    const eventsSection = described.out.slice(described.out.indexOf("Events:"));
    expect(eventsSection).toContain("no-such-image");
    expect(eventsSection).toContain(failed.reason!);
  }, 360_000);

  test("a privileged container milan's pod security (baseline, the chart's default) forbids: no pod in milan, and kubectl describe pod in rome says why", async () => {
    const hello = { image: rigImageRefs.hello };
    await q.rome.create(
      Resources.pods,
      offloadedPod("privileged", { ...hello, securityContext: { privileged: true } }),
    );
    const local = await q.rome.get(Resources.pods, "privileged", NS);
    let seen: Ev[] = [];
    const refused = await waitFor(
      "the provider's refusal on the local pod",
      async () => {
        seen = await eventsOf(q.rome, NS, local.metadata.uid!, true);
        return seen.find((e) => e.reason === "PodCreationFailed");
      },
      { timeoutMs: 120_000, intervalMs: 1000, describe: () => seen.map((e) => `${e.reason}: ${e.message}`) },
    );
    expect(refused.type).toBe("Warning");
    expect(refused.message).toContain('violates PodSecurity "baseline');
    expect(refused.message).toContain("privileged");
    // The controller records no host: the cluster's name alone says where it happened.
    expect(refused.source?.host).toBe("milan");
    const pods = await q.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" });
    expect(pods.items.map((p) => p.metadata.name)).not.toContain("privileged");
    const described = await kubectl("rome", "describe", "pod", "-n", NS, "privileged");
    expect(described.out.slice(described.out.indexOf("Events:"))).toContain("PodCreationFailed");
    await q.rome.delete(Resources.pods, "privileged", NS);
  }, 240_000);

  test("a crash-looping container: BackOff comes home; one local Event per remote one, its count following the remote's", async () => {
    await q.rome.create(
      Resources.pods,
      offloadedPod("crasher", { image: rigImageRefs.hello, command: ["sh", "-c", "echo bye; exit 1"] }),
    );
    const local = await q.rome.get(Resources.pods, "crasher", NS);
    const copy = await remoteCopy("crasher");
    let state = "";
    await waitFor(
      "a remote BackOff counted twice or more, and its local copy with the same count",
      async () => {
        const remote = (await eventsOf(q.milan, copy.metadata.namespace!, copy.metadata.uid!)).filter(
          (e) => e.reason === "BackOff",
        );
        const mine = await eventsOf(q.rome, NS, local.metadata.uid!, true);
        const byRemote = new Map(mine.map((e) => [e.metadata.annotations?.["liqo.io/remote-event"], e]));
        state = JSON.stringify({
          remote: remote.map((e) => [e.metadata.name, e.count]),
          local: mine.map((e) => [e.reason, e.count]),
        });
        return remote.some(
          (r) => (r.count ?? 0) >= 2 && byRemote.get(`${r.metadata.namespace}/${r.metadata.name}`)?.count === r.count,
        );
      },
      { timeoutMs: 300_000, intervalMs: 2000, describe: () => state },
    );
    // Deduplicated: never two local Events for one remote Event, and none without a remote one.
    const mine = await eventsOf(q.rome, NS, local.metadata.uid!, true);
    const origins = mine.map((e) => e.metadata.annotations?.["liqo.io/remote-event"]);
    expect(new Set(origins).size).toBe(mine.length);
    const remoteNames = new Set(
      (await eventsOf(q.milan, copy.metadata.namespace!, copy.metadata.uid!)).map(
        (e) => `${e.metadata.namespace}/${e.metadata.name}`,
      ),
    );
    expect(origins.filter((o) => !remoteNames.has(o!))).toEqual([]);
    const backOff = mine.find((e) => e.reason === "BackOff")!;
    expect(backOff.message).toContain("restarting failed container");
  }, 360_000);

  test("an Event on a reflected copy (the ConfigMap greeting in milan) shows on rome's ConfigMap", async () => {
    const local = await q.rome.get(Resources.configMaps, "greeting", NS);
    const twin = (await remoteCopy("crasher")).metadata.namespace!;
    const copy = await waitFor(
      "greeting reflected to milan",
      () => q.milan.find(Resources.configMaps, "greeting", twin),
      { timeoutMs: 120_000 },
    );
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await q.milan.create(Resources.events, {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "greeting.checked", namespace: twin },
      involvedObject: {
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "greeting",
        namespace: twin,
        uid: copy.metadata.uid,
      },
      reason: "Audited",
      message: "configuration checked by milan's auditor",
      type: "Normal",
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: "auditor" },
    } as KubeObject);
    const home = await waitFor(
      "the Event on rome's ConfigMap",
      async () => (await eventsOf(q.rome, NS, local.metadata.uid!, true)).find((e) => e.reason === "Audited"),
      { timeoutMs: 120_000 },
    );
    expect(home.involvedObject).toMatchObject({
      kind: "ConfigMap",
      name: "greeting",
      namespace: NS,
      uid: local.metadata.uid,
    });
    expect(home.message).toBe("configuration checked by milan's auditor");
  }, 180_000);

  test("an Event storm in milan is bounded in rome; liqo's own Events are not reflected; nothing is written back to milan", async () => {
    const crasher = await remoteCopy("crasher");
    const badImage = await remoteCopy("bad-image");
    const twin = crasher.metadata.namespace!;
    await q.milan.create(Resources.events, milanEvent(crasher, "crasher.liqo-own", "LiqoOwn", "liqo-shadowpod"));
    const STORM = 200;
    for (let i = 0; i < STORM; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          q.milan.create(Resources.events, milanEvent(crasher, `crasher.storm-${i + j}`, "Storm", "storm-maker")),
        ),
      );
    }
    // Queued after the whole storm: once it is home, the storm has been handled.
    await q.milan.create(Resources.events, milanEvent(badImage, "bad-image.after-storm", "AfterStorm", "storm-maker"));
    const localBad = await q.rome.get(Resources.pods, "bad-image", NS);
    await waitFor(
      "the Event created after the storm, home",
      async () => (await eventsOf(q.rome, NS, localBad.metadata.uid!, true)).some((e) => e.reason === "AfterStorm"),
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    const localCrasher = await q.rome.get(Resources.pods, "crasher", NS);
    const onCrasher = await eventsOf(q.rome, NS, localCrasher.metadata.uid!, true);
    const storm = onCrasher.filter((e) => e.reason === "Storm").length;
    console.log(
      `event storm: ${STORM} Events on one pod in milan, ${storm} of them reflected to rome (${onCrasher.length} reflected on that pod in all)`,
    );
    // 25 new Events per object, then one per 30 s: far below the storm.
    expect(storm).toBeGreaterThan(0);
    expect(onCrasher.length).toBeLessThanOrEqual(50);
    expect(onCrasher.filter((e) => e.reason === "LiqoOwn")).toEqual([]);
    // Nothing echoes: no Event in milan was written by event reflection.
    expect((await q.milan.list(Resources.events, { namespace: twin, labelSelector: REFLECTED })).items).toEqual([]);
  }, 300_000);
});

describe("reflection policies", () => {
  const policyCm = "liqo-reflection-policy";
  let twin = "";
  const inMilan = async (res: typeof Resources.secrets, name: string) => {
    twin ||= (await remoteCopy("crasher")).metadata.namespace!;
    return !!(await q.milan.find(res, name, twin));
  };
  const liqoctlStatus = async () => {
    const proc = Bun.spawn([...liqoctl, "status", `--kubeconfig=${q.kubeconfig("rome")}`], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    return { out, err, code: await proc.exited };
  };

  test("set at install (--reflection-policy secrets=opt-in) and shown by liqoctl status: only the Secret that opts in reaches milan", async () => {
    const status = await liqoctlStatus();
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/Reflection policy:\n {2}configmaps\s+all\n {2}secrets\s+opt-in\n/);
    await q.rome.create(Resources.secrets, {
      metadata: { name: "plain", namespace: NS },
      stringData: { k: "v" },
    } as KubeObject);
    await q.rome.create(Resources.secrets, {
      metadata: { name: "opted", namespace: NS, annotations: { "liqo.io/allow-reflection": "true" } },
      stringData: { k: "v" },
    } as KubeObject);
    await waitFor("the Secret that opted in, in milan", () => inMilan(Resources.secrets, "opted"), {
      timeoutMs: 120_000,
    });
    expect(await inMilan(Resources.secrets, "plain")).toBe(false);
  }, 180_000);

  test("a change applies to what is already reflected: configmaps=opt-in removes the copies that did not opt in; opting in brings one back", async () => {
    await q.rome.create(Resources.configMaps, {
      metadata: { name: "settings", namespace: NS },
      data: { a: "1" },
    } as KubeObject);
    await waitFor("settings reflected to milan (configmaps: all)", () => inMilan(Resources.configMaps, "settings"), {
      timeoutMs: 120_000,
    });
    await q.rome.mergePatch(Resources.configMaps, policyCm, "liqo", { data: { configmaps: "opt-in" } });
    await waitFor("settings removed from milan", async () => !(await inMilan(Resources.configMaps, "settings")), {
      timeoutMs: 120_000,
    });
    expect((await liqoctlStatus()).out).toMatch(/ {2}configmaps\s+opt-in\n/);
    await q.rome.mergePatch(Resources.configMaps, "settings", NS, {
      metadata: { annotations: { "liqo.io/allow-reflection": "true" } },
    });
    await waitFor("settings back in milan once it opts in", () => inMilan(Resources.configMaps, "settings"), {
      timeoutMs: 120_000,
    });
  }, 300_000);

  test("a policy naming an unknown kind is refused: by liqoctl install before touching the cluster; in the ConfigMap with a Warning Event, the policy in force kept", async () => {
    const install = Bun.spawn(
      [
        ...liqoctl,
        "install",
        "generic",
        `--kubeconfig=${q.kubeconfig("rome")}`,
        "--reflection-policy=deployments=none",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [out, err] = await Promise.all([new Response(install.stdout).text(), new Response(install.stderr).text()]);
    expect(out + err).toContain(
      '--reflection-policy deployments=none: unknown kind "deployments"; reflection policies exist for configmaps, secrets, services, endpointslices, ingresses, events',
    );
    expect(await install.exited).not.toBe(0);

    await q.rome.mergePatch(Resources.configMaps, policyCm, "liqo", {
      data: { deployments: "none", configmaps: "all" },
    });
    const cm = await q.rome.get(Resources.configMaps, policyCm, "liqo");
    const warning = await waitFor(
      "the InvalidReflectionPolicy Event on the ConfigMap",
      async () =>
        (await eventsOf(q.rome, "liqo", cm.metadata.uid!)).find((e) => e.reason === "InvalidReflectionPolicy"),
      { timeoutMs: 60_000 },
    );
    expect(warning.message).toContain('unknown kind "deployments"');
    expect((await liqoctlStatus()).out).toContain("Reflection policy: refused");
    // configmaps stays opt-in, as before the refused change.
    await q.rome.create(Resources.configMaps, {
      metadata: { name: "fresh", namespace: NS },
      data: { a: "1" },
    } as KubeObject);
    await q.rome.create(Resources.configMaps, {
      metadata: { name: "fresh-opted", namespace: NS, annotations: { "liqo.io/allow-reflection": "true" } },
      data: { a: "1" },
    } as KubeObject);
    await waitFor("fresh-opted in milan", () => inMilan(Resources.configMaps, "fresh-opted"), { timeoutMs: 120_000 });
    expect(await inMilan(Resources.configMaps, "fresh")).toBe(false);
    // Fixed: the policy it names is in force (configmaps: all brings fresh).
    await q.rome.mergePatch(Resources.configMaps, policyCm, "liqo", { data: { deployments: null } });
    await waitFor("fresh in milan once the ConfigMap is fixed", () => inMilan(Resources.configMaps, "fresh"), {
      timeoutMs: 120_000,
    });
  }, 300_000);
});

describe("a reflector plugin written outside the repository, in the in-cluster peering", () => {
  const cli = liqoctlOn;
  const romeRequest = async () =>
    (
      await q.rome.list<ResourceRequest & KubeObject>(ResourceRequestResource, {
        labelSelector: "liqo.io/replication=true",
      })
    ).items[0];

  test("liqoctl plugin allow refuses what it cannot allow, naming why, and changes nothing", async () => {
    const unknown = await cli("rome", "plugin", "allow", "Gizmo");
    expect(unknown.err).toContain(
      "liqoctl plugin allow Gizmo: unknown kind Gizmo: this cluster serves no such resource; kubectl api-resources --namespaced lists the kinds it serves",
    );
    expect(unknown.code).toBe(2);
    const refused = [
      [
        "Deployment",
        "a provider would refuse it: Deployment (apps/v1): creates Pods, which a peer may only run through ShadowPods",
      ],
      ["Pod", "a provider would refuse it: Pod (v1): Pods are offloaded through ShadowPods"],
      ["ClusterRole", "a provider would refuse it: ClusterRole (rbac.authorization.k8s.io/v1) is cluster-scoped"],
      ["cm", "a provider would refuse it: ConfigMap (v1): is reflected by the built-in configmaps reflector"],
    ];
    for (const [kind, why] of refused) {
      const r = await cli("rome", "plugin", "allow", kind!);
      expect({ kind, err: r.err.includes(why!), code: r.code }).toEqual({ kind, err: true, code: 2 });
    }
    const nowhere = await cli("rome", "plugin", "allow", "pdb", "--liqo-namespace=nowhere");
    expect(nowhere.err).toContain(
      "liqo is not installed in namespace nowhere (no Helm release liqo there): install it first (liqoctl install), or name its namespace (--liqo-namespace)",
    );
    expect(nowhere.code).toBe(1);
    // Helm fails (a chart that does not render): the release keeps the values it had.
    const broken = mkdtempSync(join(tmpdir(), "liqo-broken-chart-"));
    cpSync(join(import.meta.dir, "../../chart"), broken, { recursive: true });
    writeFileSync(join(broken, "templates/broken.yaml"), '{{ fail "this chart is broken on purpose" }}\n');
    const before = await releaseValuesOf("rome");
    const failed = await cli("rome", "plugin", "allow", "NetworkPolicy", `--local-chart-path=${broken}`);
    rmSync(broken, { recursive: true, force: true });
    expect(failed.err).toContain(
      "reflection.pluginRules: + get,list,watch,delete on networkpolicies.networking.k8s.io",
    );
    expect(failed.err).toContain("this chart is broken on purpose");
    expect(failed.err).toContain("the release keeps the values it had");
    expect(failed.code).toBe(1);
    expect(await releaseValuesOf("rome")).toEqual(before);
  }, 120_000);

  test("liqoctl plugin init/build, installed on rome, refused by milan with the fix, granted once milan ran it: a PodDisruptionBudget and its update reach milan; removed, nothing is left", async () => {
    // rome's one command (beforeAll): the change shown first, the rule in its release, every other value kept.
    expect(romeAllowed.err).toContain(
      "liqo is installed in namespace liqo: its values stay, except\n  reflection.pluginRules: + get,list,watch,delete on poddisruptionbudgets.policy",
    );
    expect(romeAllowed.out).toContain(
      "liqo's controller manager may get, list, watch, delete PodDisruptionBudget (poddisruptionbudgets.policy)",
    );
    const romeValues = await releaseValuesOf("rome");
    expect(romeValues).toEqual({
      ...valuesBefore.rome,
      reflection: {
        ...(valuesBefore.rome!.reflection as object),
        pluginRules: [
          { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["get", "list", "watch", "delete"] },
        ],
      },
    });
    const again = await cli("rome", "plugin", "allow", "poddisruptionbudgets.policy");
    expect(again.err).toContain("poddisruptionbudgets.policy is already allowed (reflection.pluginRules)");
    expect(again.err).toContain("nothing to change: the release keeps its values");
    expect(again.err).not.toContain("Upgrading");
    expect(again.code).toBe(0);

    const { wasm, built } = await pdbPlugin;
    expect(built).toContain("built build/pdbs.wasm");
    const twin = (await remoteCopy("nginx-remote")).metadata.namespace!;
    await q.rome.create(PDBS, pdb("web", NS, 1, { app: "web" }, { unhealthyPodEvictionPolicy: "AlwaysAllow" }));
    const installed = await cli("rome", "plugin", "install", wasm);
    expect(installed.out + installed.err).toContain(
      "plugin pdbs installed: pdbs 0.1.0, reflects PodDisruptionBudget.policy/v1 (forward)",
    );
    expect(installed.code).toBe(0);
    expect(installed.err).not.toContain("WARN"); // rome's controller manager may read PDBS (liqoctl plugin allow)

    // milan was installed without plugin support: it refuses, and rome is told the command to run there.
    const fix = "the fix, on this provider: liqoctl plugin allow PodDisruptionBudget.policy --grant";
    let listed = "";
    await waitFor(
      "milan's refusal in liqoctl plugin list on rome",
      async () => {
        const l = await cli("rome", "plugin", "list");
        listed = l.out + l.err;
        return listed.includes(fix);
      },
      { timeoutMs: 90_000, describe: () => listed },
    );
    expect(listed).toMatch(/Problems:\n {2}pdbs: \S+: Refused \(granting failed here: /);
    expect(listed).toContain(
      "granting peers' reflector plugins needs the chart value reflection.grantPeerPlugins=true",
    );
    expect((await cli("rome", "status")).out).toMatch(
      /milan \(outgoing\): pdbs Refused: granting failed here: .*liqoctl plugin allow PodDisruptionBudget.policy --grant/,
    );
    expect(await q.milan.find(PDBS, "web", twin)).toBeUndefined();
    const granted = await cli("milan", "plugin", "allow", "PodDisruptionBudget.policy", "--grant");
    expect(granted.err).toContain(
      "its values stay, except\n  reflection.pluginRules: + get,list,watch,delete on poddisruptionbudgets.policy\n  reflection.grantPeerPlugins: true",
    );
    expect(granted.code).toBe(0);

    // Hot-loaded by the controller manager's virtual kubelet in rome once milan's controller manager granted it.
    const copy = (await waitFor("the PodDisruptionBudget reflected into milan", () => q.milan.find(PDBS, "web", twin), {
      timeoutMs: 120_000,
      // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    })) as any;
    const romeId = copy.metadata.labels["liqo.io/origin-cluster-id"];
    expect(copy.metadata.labels).toEqual({
      "liqo.io/managed-by": "reflection",
      "liqo.io/origin-cluster-id": romeId,
      "pdbs.liqo.io/reflected": "true",
    });
    expect(copy.spec).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: { app: "web" } },
      unhealthyPodEvictionPolicy: "AlwaysAllow",
    });
    // A field removed in rome is removed in milan.
    await q.rome.mergePatch(PDBS, "web", NS, { spec: { minAvailable: 2, unhealthyPodEvictionPolicy: null } });
    await waitFor(
      "the update reflected (minAvailable 2, no unhealthyPodEvictionPolicy)",
      async () => {
        // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
        const spec = ((await q.milan.find(PDBS, "web", twin)) as any)?.spec;
        return spec?.minAvailable === 2 && !("unhealthyPodEvictionPolicy" in spec);
      },
      { timeoutMs: 60_000 },
    );

    // The grant, exactly: milan's ClusterRole for rome, bound in the twin namespace only; shown on both sides.
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    const role = (await milan(ClusterRoles, pluginClusterRoleName(romeId))) as any;
    expect(role.rules).toEqual([{ apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: FORWARD_VERBS }]);
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    expect(((await milan(RoleBindings, PLUGIN_BINDING, twin)) as any).roleRef.name).toBe(pluginClusterRoleName(romeId));
    const tenant = (await findTenantNamespace(q.milan, romeId))!.metadata.name!;
    expect(await peerMay(romeId, tenant, "create", twin)).toBe(true);
    expect(await peerMay(romeId, tenant, "create", "default")).toBe(false);
    expect((await romeRequest())!.status?.reflectorPlugins?.map((g) => [g.name, g.state])).toEqual([
      ["pdbs", "Granted"],
    ]);
    const milanStatus = await cli("milan", "status");
    expect(milanStatus.out).toContain(
      "rome (incoming): pdbs Granted: granted get,list,watch,create,patch,delete on poddisruptionbudgets.policy in the peer's twin namespaces",
    );
    expect((await cli("rome", "status")).out).toMatch(/milan \(outgoing\): pdbs Granted/);
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    const rows = (await clusterViews(q.milan).views!["reflector-plugins"]!({ query: {} } as never)) as any[];
    expect(rows.map((r) => [r.side, r.clusterId, r.plugin, r.state])).toEqual([
      ["incoming", romeId, "pdbs", "Granted"],
    ]);

    // Turning plugin support off while the plugin is in use is refused on both sides, with what to do first.
    const inUseRome = await cli("rome", "plugin", "disallow", "PodDisruptionBudget");
    expect(inUseRome.err).toContain(
      "poddisruptionbudgets.policy is in use here, nothing changed:\n  plugin pdbs (ConfigMap liqo/liqo-plugin-pdbs) reflects it: remove it first (liqoctl plugin remove pdbs)",
    );
    expect(inUseRome.code).toBe(1);
    const inUseMilan = await cli("milan", "plugin", "disallow", "PodDisruptionBudget");
    expect(inUseMilan.err).toContain(
      `peer ${romeId}'s pdbs holds it here (ClusterRole ${pluginClusterRoleName(romeId)})`,
    );
    expect(inUseMilan.code).toBe(1);

    const removed = await cli("rome", "plugin", "remove", "pdbs");
    expect(removed.out).toContain("plugin pdbs removed");
    expect(removed.code).toBe(0);
    await waitFor("the copy gone from milan", async () => !(await q.milan.find(PDBS, "web", twin)), {
      timeoutMs: 60_000,
    });
    await waitFor(
      "milan's ClusterRole for rome's plugins gone",
      async () => !(await q.milan.find(ClusterRoles, pluginClusterRoleName(romeId))),
      { timeoutMs: 60_000 },
    );
    await waitFor("its RoleBinding gone", async () => !(await q.milan.find(RoleBindings, PLUGIN_BINDING, twin)), {
      timeoutMs: 60_000,
    });
    expect(await peerMay(romeId, tenant, "create", twin)).toBe(false);
    expect((await q.milan.list(PDBS, { namespace: twin })).items).toEqual([]);
    expect(
      (await q.rome.list(Resources.configMaps, { namespace: "liqo", labelSelector: `${PLUGIN_LABEL}=true` })).items,
    ).toEqual([]);
    await waitFor(
      "the plugin gone from rome's ResourceRequest",
      async () => !(await romeRequest())?.spec.reflectorPlugins?.length,
      { timeoutMs: 60_000 },
    );
    // rome's own object stays.
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, RBAC, PDBS, views), asserted on a few fields
    expect(((await q.rome.get(PDBS, "web", NS)) as any).spec.minAvailable).toBe(2);

    // A user's mistake in-cluster: a plugin of a kind liqo's controller manager may not read (no
    // reflection.pluginRules for NetworkPolicies). Stored, with the fix on stderr.
    const netpol = await cli("rome", "plugin", "install", wasmPath("networkpolicy"));
    expect(netpol.code).toBe(0);
    expect(netpol.err).toContain(
      "liqo's controller manager (ServiceAccount liqo/liqo-controller-manager) may not get, list, watch networkpolicies.networking.k8s.io: " +
        "peerings load the plugin but reflect no NetworkPolicy until it may. Allow it: liqoctl plugin allow networkpolicies.networking.k8s.io",
    );
    expect((await cli("rome", "plugin", "remove", "networkpolicies")).code).toBe(0);
  }, 480_000);

  test("liqoctl plugin disallow on both sides: the rules and the grant switch go, every other value stays as before allow", async () => {
    const [rome, milanOff] = await Promise.all([
      cli("rome", "plugin", "disallow", "pdb"),
      cli("milan", "plugin", "disallow", "PodDisruptionBudget"),
    ]);
    expect(rome.err).toContain(
      "its values stay, except\n  reflection.pluginRules: - get,list,watch,delete on poddisruptionbudgets.policy",
    );
    expect(rome.code).toBe(0);
    expect(milanOff.err).toContain(
      "reflection.pluginRules: - get,list,watch,delete on poddisruptionbudgets.policy\n  reflection.grantPeerPlugins: false",
    );
    expect(milanOff.out).toContain("and peers' plugins are no longer granted");
    expect(milanOff.code).toBe(0);
    for (const cluster of ["rome", "milan"]) {
      const before = valuesBefore[cluster]!;
      const reflection = { ...(before.reflection as object), pluginRules: [] };
      expect(await releaseValuesOf(cluster)).toEqual({
        ...before,
        reflection: cluster === "milan" ? { ...reflection, grantPeerPlugins: false } : reflection,
      });
    }
    // The controller managers' rights follow the chart: neither may list PodDisruptionBudgets, milan may not write RBAC.
    const losesRight = (cluster: string, verb: string, group: string, resource: string) =>
      waitFor(
        `liqo's controller manager in ${cluster} no longer may ${verb} ${resource}`,
        async () => !(await controllerManagerMay(cluster, verb, group, resource)),
        { timeoutMs: 30_000 },
      );
    await losesRight("rome", "list", "policy", "poddisruptionbudgets");
    await losesRight("milan", "delete", "policy", "poddisruptionbudgets");
    await losesRight("milan", "escalate", "rbac.authorization.k8s.io", "clusterroles");
    const again = await cli("rome", "plugin", "disallow", "PodDisruptionBudget");
    expect(again.err).toContain(
      "poddisruptionbudgets.policy is not allowed (no rule of reflection.pluginRules covers it)",
    );
    expect(again.err).toContain("nothing to change");
    expect(again.code).toBe(0);
  }, 300_000);
});

/** What a cluster's API server answers to a SubjectAccessReview of a ServiceAccount. */
async function serviceAccountMay(
  client: KubeClient,
  namespace: string,
  name: string,
  resourceAttributes: Record<string, string>,
): Promise<boolean> {
  const review = await client.create<KubeObject & { status?: { allowed?: boolean } }>(
    {
      group: "authorization.k8s.io",
      version: "v1",
      kind: "SubjectAccessReview",
      plural: "subjectaccessreviews",
      namespaced: false,
    },
    {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec: {
        user: `system:serviceaccount:${namespace}:${name}`,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`],
        resourceAttributes,
      },
    } as KubeObject,
  );
  return review.status?.allowed === true;
}

/** What a cluster's API server says liqo's controller manager may do (cluster-wide). */
function controllerManagerMay(cluster: string, verb: string, group: string, resource: string): Promise<boolean> {
  return serviceAccountMay(cluster === "rome" ? q.rome : q.milan, "liqo", "liqo-controller-manager", {
    verb,
    group,
    resource,
  });
}

const milan = (res: ResourceRef, name: string, ns?: string) =>
  waitFor(`${name} in milan`, () => q.milan.find(res, name, ns), { timeoutMs: 60_000 });

/** What milan's API server says rome's peer identity may do with PodDisruptionBudgets in a namespace. */
function peerMay(romeId: string, tenant: string, verb: string, namespace: string): Promise<boolean> {
  return serviceAccountMay(q.milan, tenant, remoteServiceAccountName(romeId), {
    verb,
    group: "policy",
    resource: "poddisruptionbudgets",
    namespace,
  });
}
