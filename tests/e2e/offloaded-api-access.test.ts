// API server support on real nodes: a pod offloaded from rome to milan that calls the Kubernetes API
// with its ServiceAccount token reaches rome's API server (what operators and sidecars expect), as
// in Liqo v0.5. The in-cluster quick start (liqo installed with liqoctl on two real-node clusters,
// peered, liqo-demo offloaded), then a real container in milan runs curl with the mounted token.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { API_SERVER_SUPPORT_ANNOTATION, remoteTokenSecretName, SERVICE_ACCOUNT_MOUNT } from "../../core/virtualkubelet/pods/forge.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, reapOrphanRigs, rigDown } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

type Pod = KubeObject & { spec?: Record<string, any>; status?: { phase?: string } };

const NS = "liqo-demo";
const rbac = (kind: string, plural: string) => ({ group: "rbac.authorization.k8s.io", version: "v1", kind, plural, namespaced: true });
const onVirtualNode = { nodeSelector: { "liqo.io/type": "virtual-node" }, tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }] };

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
function lastRound(log: string): { address: string; configMap: any; whoami: any } | undefined {
  const rounds = log.split("=== address ").slice(1).filter((r) => r.includes("=== end"));
  const last = rounds.at(-1);
  if (!last) return undefined;
  const section = (name: string, next: string) => last.slice(last.indexOf(`=== ${name}\n`) + name.length + 5, last.indexOf(`=== ${next}`));
  try {
    return { address: last.slice(0, last.indexOf("\n")), configMap: JSON.parse(section("configmap", "whoami")), whoami: JSON.parse(section("whoami", "end")) };
  } catch {
    return undefined; // an error message, not an answer: wait for the next round
  }
}

let q: InClusterQuickstart;

async function kubectl(cluster: string, ...args: string[]): Promise<{ out: string; err: string; code: number }> {
  const proc = Bun.spawn([q.kubectl, `--kubeconfig=${q.kubeconfig(cluster)}`, ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { out, err, code: await proc.exited };
}

/** The remote copy of a local pod of liqo-demo, Running in milan. */
async function remotePod(name: string): Promise<Pod> {
  return waitFor(`${name} Running in milan`, async () => {
    const pods = await q.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" });
    const p = pods.items.find((x) => x.metadata.name === name);
    return p?.status?.phase === "Running" ? p : undefined;
  }, { timeoutMs: 180_000 });
}

beforeAll(async () => {
  await reapOrphanRigs(testRigRoot);
  const dir = mkdtempSync(join(testRigRoot, "api-access-"));
  process.on("exit", () => { if (q) killRigNow(q.rig); });
  q = await runInClusterQuickstart({ dir, owner: process.pid, progress: process.env.RIG_VERBOSE ? (m) => console.error(`[api-access] ${m}`) : undefined });
  console.log(`in-cluster quick start: ${Object.entries(q.timings).map(([k, v]) => `${k} ${v.toFixed(0)}s`).join(", ")}`);
  // In rome: a ServiceAccount that may read ConfigMaps of liqo-demo, and one to read.
  await q.rome.create(Resources.serviceAccounts, { metadata: { name: "reader", namespace: NS } } as KubeObject);
  await q.rome.create(rbac("Role", "roles"), { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "configmap-reader", namespace: NS },
    rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }] } as KubeObject);
  await q.rome.create(rbac("RoleBinding", "rolebindings"), { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "reader", namespace: NS },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "configmap-reader" }, subjects: [{ kind: "ServiceAccount", name: "reader", namespace: NS }] } as KubeObject);
  await q.rome.create(Resources.configMaps, { metadata: { name: "greeting", namespace: NS }, data: { message: "hello from rome" } } as KubeObject);
}, 1_200_000);

afterAll(async () => {
  if (q) await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}, 120_000);

describe("an offloaded pod calls its origin cluster's API server with its ServiceAccount", () => {
  test("curl in the container in milan with the mounted token: rome's ConfigMap, as rome's system:serviceaccount:liqo-demo:reader", async () => {
    await q.rome.create(Resources.pods, { apiVersion: "v1", kind: "Pod", metadata: { name: "api-client", namespace: NS },
      spec: { ...onVirtualNode, serviceAccountName: "reader",
        containers: [{ name: "client", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent", command: ["sh", "-c", CLIENT_SCRIPT] }] } } as KubeObject);
    const remote = await remotePod("api-client");
    let log = "";
    const round = await waitFor("an answer from rome's API server in the container's log", async () => {
      const r = await kubectl("milan", "logs", "-n", remote.metadata.namespace!, "api-client", "--tail=200");
      log = r.out + r.err;
      const last = lastRound(r.out);
      return last?.configMap.kind === "ConfigMap" && last.whoami.kind === "SelfSubjectReview" ? last : undefined;
    }, { timeoutMs: 180_000, intervalMs: 2000, describe: () => log.slice(-1500) });
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
    const tokenVolumes = remote.spec!.volumes.filter((v: any) => v.projected?.sources?.some((s: any) => s.serviceAccountToken));
    expect(tokenVolumes).toEqual([]);
    const secretName = remoteTokenSecretName("api-client");
    expect(remote.spec!.volumes.filter((v: any) => v.secret?.secretName === secretName).length).toBe(1);
    const secret = await q.milan.get<KubeObject & { data: Record<string, string> }>(Resources.secrets, secretName, remote.metadata.namespace!);
    expect(secret.metadata.ownerReferences?.map((r) => r.kind)).toEqual(["ShadowPod"]);
    expect(Buffer.from(secret.data.namespace!, "base64").toString()).toBe(NS);
  }, 240_000);

  test("opted out with the annotation: no token at all, the provider's address", async () => {
    await q.rome.create(Resources.pods, { apiVersion: "v1", kind: "Pod",
      metadata: { name: "no-api", namespace: NS, annotations: { [API_SERVER_SUPPORT_ANNOTATION]: "disabled" } },
      spec: { ...onVirtualNode, serviceAccountName: "reader",
        containers: [{ name: "client", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent", command: ["sh", "-c", `ls ${SERVICE_ACCOUNT_MOUNT} 2>&1; echo "host=$KUBERNETES_SERVICE_HOST"; sleep 3600`] }] } } as KubeObject);
    const remote = await remotePod("no-api");
    expect(remote.spec!.containers[0].volumeMounts ?? []).toEqual([]);
    expect(remote.spec!.containers[0].env ?? []).toEqual([]);
    let log = "";
    await waitFor("the container's report", async () => {
      log = (await kubectl("milan", "logs", "-n", remote.metadata.namespace!, "no-api")).out;
      return log.includes("host=") ? log : undefined;
    }, { timeoutMs: 120_000, describe: () => log });
    expect(log).toContain("No such file or directory");
    expect(log).not.toContain(`host=${q.rig.network!.gateway}`);
  }, 240_000);

  test("the token Secret goes with the pod", async () => {
    const remote = await remotePod("api-client");
    await q.rome.delete(Resources.pods, "api-client", NS, { gracePeriodSeconds: 0 });
    await waitFor("the token Secret deleted in milan", async () =>
      !(await q.milan.find(Resources.secrets, remoteTokenSecretName("api-client"), remote.metadata.namespace!)), { timeoutMs: 120_000 });
  }, 180_000);
});
