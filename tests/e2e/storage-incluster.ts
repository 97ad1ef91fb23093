// The storage fabric on real nodes, as users run it: the in-cluster quick start (rome peered with
// milan, both with the rig's local-path provisioner as their default class, liqo installed with
// storage on), then a StatefulSet on the `liqo` class whose two replicas are kept in different
// clusters; each writes data, is deleted, comes back in the same cluster and reads its data.
//
// Run by storage-incluster.test.ts on the clusters it shares with the stateful tutorial, which
// starts the quick start and labels rome-node-1 region center. Its last test unoffloads liqo-demo:
// nothing that needs the namespace offloaded may run after it.
import { beforeAll, describe, expect, test } from "bun:test";
import { NamespaceOffloadingResource, ResourceOfferResource } from "../../core/apis/index.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import type { InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { liqoctl } from "../quickstart/install.ts";
import { rigImageRefs } from "../rig/images.ts";
import { waitFor } from "../support/wait.ts";
import { storageBytes } from "../../core/storage/forge.ts";
import { claimScriptPod } from "../support/claim-pod.ts";
import { kubectlOn } from "../support/kubectl.ts";

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };
type Claim = KubeObject & {
  spec?: { volumeName?: string; storageClassName?: string; resources?: { requests?: { storage?: string } } };
  status?: { phase?: string; capacity?: { storage?: string } };
};
type Volume = KubeObject & { spec?: { capacity?: { storage?: string } } };
type Event = KubeObject & { type?: string; reason?: string; message?: string };

const NS = "liqo-demo";
const statefulSets: ResourceRef = {
  group: "apps",
  version: "v1",
  kind: "StatefulSet",
  plural: "statefulsets",
  namespaced: true,
};
const storageClasses: ResourceRef = {
  group: "storage.k8s.io",
  version: "v1",
  kind: "StorageClass",
  plural: "storageclasses",
  namespaced: false,
};
let q: InClusterQuickstart;
let milanId = "";

const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);

/** What the pod's data file says, read in the container (through the virtual kubelet for the remote one). */
async function readData(pod: string): Promise<string> {
  let last = "";
  return waitFor(
    `data of ${pod}`,
    async () => {
      const r = await kubectl("rome", "exec", "-n", NS, pod, "--", "cat", "/data/id");
      last = r.out + r.err;
      return r.code === 0 && r.out.trim() ? r.out.trim() : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 1000, describe: () => last },
  );
}

const running = (name: string, notUid?: string) =>
  waitFor(
    `pod ${name} Running${notUid ? " again" : ""}`,
    async () => {
      const p = await q.rome.find<Pod>(Resources.pods, name, NS);
      return p?.status?.phase === "Running" && p.metadata.uid !== notUid && !p.metadata.deletionTimestamp
        ? p
        : undefined;
    },
    {
      timeoutMs: 240_000,
      intervalMs: 1000,
      describe: async () => (await q.rome.find<Pod>(Resources.pods, name, NS))?.status,
    },
  );

async function claimEvents(name: string): Promise<Event[]> {
  const c = await q.rome.find<Claim>(Resources.persistentVolumeClaims, name, NS);
  if (!c) return [];
  return (
    await q.rome.list<Event>(Resources.events, { namespace: NS, fieldSelector: `involvedObject.uid=${c.metadata.uid}` })
  ).items;
}

/** A StatefulSet on the liqo class; its replicas may not share a region, and rome's nodes are region center. */
function statefulSet(): KubeObject {
  const labels = { app: "db" };
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db", namespace: NS },
    spec: {
      serviceName: "db",
      replicas: 2,
      selector: { matchLabels: labels },
      podManagementPolicy: "Parallel",
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: 1,
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: labels }, topologyKey: "topology.liqo.io/region" },
              ],
            },
          },
          containers: [
            {
              name: "db",
              image: rigImageRefs.hello,
              imagePullPolicy: "IfNotPresent",
              command: [
                "sh",
                "-c",
                '[ -s /data/id ] || echo "$HOSTNAME $(cat /proc/sys/kernel/random/uuid)" > /data/id; exec sleep 100000',
              ],
              volumeMounts: [{ name: "data", mountPath: "/data" }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: {
            storageClassName: "liqo",
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: "64Mi" } },
          },
        },
      ],
    },
  } as KubeObject;
}

/** The storage tests, on a quick start already up with rome-node-1 labelled region center. */
export function storageInCluster(quickstart: () => InClusterQuickstart): void {
  beforeAll(async () => {
    q = quickstart();
    const node = await q.rome.get(Resources.nodes, "liqo-milan");
    milanId = node.metadata.labels!["liqo.io/remote-cluster-id"]!;
  });

  describe("the virtual storage class", () => {
    test("installed by the chart: liqo.io/storage, WaitForFirstConsumer; milan offers its default class and the virtual node says so", async () => {
      const sc = await q.rome.get<KubeObject & { provisioner?: string; volumeBindingMode?: string }>(
        storageClasses,
        "liqo",
      );
      expect(sc.provisioner).toBe("liqo.io/storage");
      expect(sc.volumeBindingMode).toBe("WaitForFirstConsumer");
      const offers = await q.rome.list<KubeObject & { spec: { storageClasses?: unknown } }>(ResourceOfferResource);
      expect(offers.items.map((o) => o.spec.storageClasses)).toEqual([
        [{ storageClassName: "local-path", default: true }],
      ]);
      const node = await q.rome.get(Resources.nodes, "liqo-milan");
      expect(node.metadata.labels?.["storage.liqo.io/available"]).toBe("true");
      // Which class its new claims get in milan.
      expect(node.metadata.annotations?.["storage.liqo.io/storage-class"]).toBe("local-path");
    });
  });

  describe("a StatefulSet across the clusters", () => {
    const before: Record<string, { node: string; data: string; uid: string }> = {};

    test("one replica in rome, one in milan, each bound to a volume where it runs", async () => {
      await q.rome.create(statefulSets, statefulSet());
      for (const name of ["db-0", "db-1"]) {
        const pod = await running(name);
        before[name] = { node: pod.spec!.nodeName!, data: await readData(name), uid: pod.metadata.uid! };
        expect(before[name].data).toStartWith(`${name} `);
      }
      const nodes = Object.values(before).map((b) => b.node);
      expect(nodes.filter((n) => n === "liqo-milan")).toHaveLength(1);
      const local = Object.entries(before).find(([, b]) => b.node !== "liqo-milan")![0];
      const remote = Object.entries(before).find(([, b]) => b.node === "liqo-milan")![0];

      // Physical node: a twin claim with the real class in liqo-storage; the virtual PV mirrors its volume and node.
      const localClaim = await q.rome.get<Claim>(Resources.persistentVolumeClaims, `data-${local}`, NS);
      const twin = await q.rome.get<Claim>(Resources.persistentVolumeClaims, localClaim.metadata.uid!, "liqo-storage");
      expect(twin.spec?.storageClassName).toBe("local-path");
      expect(twin.status?.phase).toBe("Bound");
      // biome-ignore lint/suspicious/noExplicitAny: PersistentVolume specs read back from the cluster, asserted on a few fields
      const localPv = await q.rome.get<KubeObject & { spec: any }>(
        Resources.persistentVolumes,
        localClaim.spec!.volumeName!,
      );
      // biome-ignore lint/suspicious/noExplicitAny: PersistentVolume specs read back from the cluster, asserted on a few fields
      const realPv = await q.rome.get<KubeObject & { spec: any }>(Resources.persistentVolumes, twin.spec!.volumeName!);
      expect(localPv.spec.storageClassName).toBe("liqo");
      expect(localPv.spec.hostPath.path).toBe(realPv.spec.hostPath.path);
      expect(localPv.spec.nodeAffinity).toEqual(realPv.spec.nodeAffinity);

      // Virtual node: the virtual PV is pinned to milan; milan's copy of the claim has milan's class and a volume there.
      const remoteClaim = await q.rome.get<Claim>(Resources.persistentVolumeClaims, `data-${remote}`, NS);
      // biome-ignore lint/suspicious/noExplicitAny: PersistentVolume specs read back from the cluster, asserted on a few fields
      const remotePv = await q.rome.get<KubeObject & { spec: any }>(
        Resources.persistentVolumes,
        remoteClaim.spec!.volumeName!,
      );
      expect(remotePv.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]).toEqual({
        key: "liqo.io/remote-cluster-id",
        operator: "In",
        values: [milanId],
      });
      const inMilan = (await q.milan.list<Claim>(Resources.persistentVolumeClaims)).items.filter(
        (c) => c.metadata.name === `data-${remote}`,
      );
      expect(inMilan).toHaveLength(1);
      expect(inMilan[0]!.spec?.storageClassName).toBe("local-path");
      expect(inMilan[0]!.status?.phase).toBe("Bound");
    }, 360_000);

    test("each replica deleted comes back in the same cluster and reads its own data (data gravity)", async () => {
      expect(Object.keys(before)).toHaveLength(2);
      for (const name of ["db-0", "db-1"]) await q.rome.delete(Resources.pods, name, NS, { uid: before[name]!.uid });
      for (const name of ["db-0", "db-1"]) {
        const pod = await running(name, before[name]!.uid);
        expect(pod.spec?.nodeName).toBe(before[name]!.node);
        expect(await readData(name)).toBe(before[name]!.data);
      }
    }, 360_000);
  });

  describe("expanding a claim of the liqo class", () => {
    /** The StatefulSet's claim whose data is on rome's node, and the one whose data is in milan. */
    const where = async () => {
      const pods = await Promise.all(["db-0", "db-1"].map((n) => q.rome.get<Pod>(Resources.pods, n, NS)));
      const remote = pods.find((p) => p.spec?.nodeName === "liqo-milan")!.metadata.name!;
      return { local: remote === "db-0" ? "db-1" : "db-0", remote };
    };
    const request = (claim: string, storage: string) =>
      q.rome.mergePatch(Resources.persistentVolumeClaims, claim, NS, {
        spec: { resources: { requests: { storage } } },
      });
    const is = (q: string | undefined, size: string) => storageBytes(q) === storageBytes(size);
    /** The claim's status and its virtual PV both at `size`. */
    const grown = (claim: string, size: string) =>
      waitFor(
        `claim ${claim} and its volume at ${size}`,
        async () => {
          const c = await q.rome.get<Claim>(Resources.persistentVolumeClaims, claim, NS);
          const pv = await q.rome.get<Volume>(Resources.persistentVolumes, c.spec!.volumeName!);
          return is(c.status?.capacity?.storage, size) && is(pv.spec?.capacity?.storage, size) ? c : undefined;
        },
        {
          timeoutMs: 180_000,
          intervalMs: 1000,
          describe: async () => (await q.rome.get<Claim>(Resources.persistentVolumeClaims, claim, NS)).status,
        },
      );

    test("the class allows expansion", async () => {
      const sc = await q.rome.get<KubeObject & { allowVolumeExpansion?: boolean }>(storageClasses, "liqo");
      expect(sc.allowVolumeExpansion).toBe(true);
    });

    test("on rome's node: the real claim and volume grow, then the virtual PV and the claim's status; the data stays", async () => {
      const { local } = await where();
      const data = await readData(local);
      await request(`data-${local}`, "96Mi");
      const claim = await grown(`data-${local}`, "96Mi");
      expect(claim.status?.phase).toBe("Bound");
      const twin = await q.rome.get<Claim>(Resources.persistentVolumeClaims, claim.metadata.uid!, "liqo-storage");
      expect(is(twin.spec?.resources?.requests?.storage, "96Mi")).toBe(true);
      expect(is(twin.status?.capacity?.storage, "96Mi")).toBe(true);
      expect(await readData(local)).toBe(data);
    }, 240_000);

    test("in milan: milan's claim grows and its size comes home to the claim and its virtual PV; the data stays", async () => {
      const { remote } = await where();
      const data = await readData(remote);
      await request(`data-${remote}`, "80Mi");
      const copy = await waitFor(
        "milan's copy grown",
        async () => {
          const c = (await q.milan.list<Claim>(Resources.persistentVolumeClaims)).items.find(
            (x) => x.metadata.name === `data-${remote}`,
          );
          return c && is(c.status?.capacity?.storage, "80Mi") ? c : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      expect(is(copy.spec?.resources?.requests?.storage, "80Mi")).toBe(true);
      expect((await grown(`data-${remote}`, "80Mi")).status?.phase).toBe("Bound");
      expect(await readData(remote)).toBe(data);
    }, 240_000);

    test("beyond the free space: the refusal named on the claim, its size, binding and data kept; a smaller request is then met", async () => {
      const { local } = await where();
      const data = await readData(local);
      await request(`data-${local}`, "100Ti");
      const e = await waitFor(
        "the refused expansion on the claim",
        async () =>
          (await claimEvents(`data-${local}`)).find((x) => x.type === "Warning" && x.message?.includes("100Ti")),
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      expect(e.reason).toBe("VolumeResizeFailed");
      expect(e.message).toContain("ask for less");
      expect(e.message).toContain("lower its request");
      const claim = await q.rome.get<Claim>(Resources.persistentVolumeClaims, `data-${local}`, NS);
      expect(claim.status?.phase).toBe("Bound");
      expect(is(claim.status?.capacity?.storage, "96Mi")).toBe(true);
      const pv = await q.rome.get<Volume>(Resources.persistentVolumes, claim.spec!.volumeName!);
      expect(is(pv.spec?.capacity?.storage, "96Mi")).toBe(true);
      expect(await readData(local)).toBe(data);
      // Kubernetes lets a request that could not be met come down again (above the capacity): the
      // real claim follows it down, and that size is met.
      await request(`data-${local}`, "100Mi");
      await grown(`data-${local}`, "100Mi");
      const twin = await q.rome.get<Claim>(Resources.persistentVolumeClaims, claim.metadata.uid!, "liqo-storage");
      expect(is(twin.spec?.resources?.requests?.storage, "100Mi")).toBe(true);
      expect(await readData(local)).toBe(data);
      // Shrinking below the capacity: refused by Kubernetes' own validation, so liqo never sees it.
      const shrink = await request(`data-${local}`, "32Mi").catch((e) => e);
      expect(shrink.status).toBe(422);
      expect(shrink.message).toContain("status.capacity");
      const after = await q.rome.get<Claim>(Resources.persistentVolumeClaims, `data-${local}`, NS);
      expect(is(after.spec?.resources?.requests?.storage, "100Mi")).toBe(true);
    }, 300_000);
  });

  describe("wrong inputs", () => {
    const claimAndPod = async (name: string, storageClassName: string, size: string, where: "local" | "remote") => {
      await q.rome.create(Resources.persistentVolumeClaims, {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name, namespace: NS },
        spec: { storageClassName, accessModes: ["ReadWriteOnce"], resources: { requests: { storage: size } } },
      } as KubeObject);
      const placement =
        where === "local"
          ? {
              affinity: {
                nodeAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [
                      { matchExpressions: [{ key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] }] },
                    ],
                  },
                },
              },
            }
          : { nodeSelector: { "liqo.io/type": "virtual-node" } };
      await q.rome.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: NS },
        spec: {
          ...placement,
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "c",
              image: rigImageRefs.hello,
              imagePullPolicy: "IfNotPresent",
              volumeMounts: [{ name: "d", mountPath: "/data" }],
            },
          ],
          volumes: [{ name: "d", persistentVolumeClaim: { claimName: name } }],
        },
      } as KubeObject);
    };

    test("an unknown storage class: the claim says so and its pod waits", async () => {
      await claimAndPod("unknown-class", "no-such-class", "10Mi", "local");
      const e = await waitFor(
        "an Event naming the missing class",
        async () =>
          (await claimEvents("unknown-class")).find(
            (x) => x.type === "Warning" && x.message?.includes("no-such-class"),
          ),
        { timeoutMs: 120_000 },
      );
      expect(e.message).toContain("not found");
      expect((await q.rome.get<Pod>(Resources.pods, "unknown-class", NS)).status?.phase).toBe("Pending");
    }, 180_000);

    test("a claim larger than the node can hold: the real claim's refusal is shown on the user's claim, nothing else touched", async () => {
      await claimAndPod("too-large", "liqo", "100Ti", "local");
      const e = await waitFor(
        "the refusal relayed to the claim",
        async () => (await claimEvents("too-large")).find((x) => x.type === "Warning" && x.message?.includes("100Ti")),
        { timeoutMs: 120_000 },
      );
      expect(e.message).toContain("cannot be provisioned");
      expect(e.message).toContain("ask for less");
      expect((await q.rome.get<Claim>(Resources.persistentVolumeClaims, "too-large", NS)).status?.phase).toBe(
        "Pending",
      );
      // The StatefulSet's data is untouched.
      for (const name of ["db-0", "db-1"]) expect(await readData(name)).toStartWith(`${name} `);
    }, 180_000);

    test("a claim larger than the provider can hold: milan's refusal comes home to the user's claim", async () => {
      await claimAndPod("too-large-remote", "liqo", "100Ti", "remote");
      const e = await waitFor(
        "milan's refusal on rome's claim",
        async () =>
          (await claimEvents("too-large-remote")).find((x) => x.type === "Warning" && x.message?.includes("100Ti")),
        { timeoutMs: 180_000 },
      );
      expect(e.message).toContain("ask for less");
      expect((await q.rome.get<Pod>(Resources.pods, "too-large-remote", NS)).status?.phase).toBe("Pending");
      // Its virtual PV, pinned to milan, was made when the pod was placed; it goes with the claim.
      const claim = await q.rome.get<Claim>(Resources.persistentVolumeClaims, "too-large-remote", NS);
      expect(claim.spec?.volumeName).toBe(`pvc-${claim.metadata.uid}`);
      await q.rome.delete(Resources.pods, "too-large-remote", NS, { gracePeriodSeconds: 0 });
      await q.rome.delete(Resources.persistentVolumeClaims, "too-large-remote", NS);
      await waitFor(
        "its virtual PV gone",
        async () => !(await q.rome.find(Resources.persistentVolumes, claim.spec!.volumeName!)),
        { timeoutMs: 120_000 },
      );
    }, 240_000);

    test("deleting a claim of the liqo class removes its real claim and volume, never another's", async () => {
      await q.rome.delete(Resources.pods, "too-large", NS, { gracePeriodSeconds: 0 });
      const claim = await q.rome.get<Claim>(Resources.persistentVolumeClaims, "too-large", NS);
      await q.rome.delete(Resources.persistentVolumeClaims, "too-large", NS);
      await waitFor(
        "the twin claim gone",
        async () => !(await q.rome.find(Resources.persistentVolumeClaims, claim.metadata.uid!, "liqo-storage")),
        { timeoutMs: 120_000 },
      );
      const twins = await q.rome.list(Resources.persistentVolumeClaims, { namespace: "liqo-storage" });
      expect(twins.items).toHaveLength(1);
    }, 180_000);
  });

  describe("liqoctl move volume", () => {
    const move = async (...args: string[]) => {
      const proc = Bun.spawn(
        [...liqoctl, "move", "volume", ...args, "-n", NS, `--kubeconfig=${q.kubeconfig("rome")}`],
        {
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      return { out, err, code: await proc.exited };
    };
    /** A pod that runs once on the claim, placed by the scheduler (by the volume's affinity, unless told). */
    const once = async (name: string, script: string, placement: Record<string, unknown> = {}) => {
      await q.rome.create(Resources.pods, claimScriptPod({ name, namespace: NS, claim: "moved", script, placement }));
      const pod = await waitFor(
        `pod ${name} done`,
        async () => {
          const p = await q.rome.find<Pod>(Resources.pods, name, NS);
          return p?.status?.phase === "Succeeded" || p?.status?.phase === "Failed" ? p : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 1000 },
      );
      const ok = pod.status!.phase === "Succeeded";
      // A failure shows why (status and log) in the assertion's diff.
      const why = ok
        ? {}
        : {
            why: {
              status: pod.status,
              log: (await kubectl("rome", "logs", "-n", NS, name)).out.trim(),
            },
          };
      await q.rome.delete(Resources.pods, name, NS, { gracePeriodSeconds: 0 });
      await waitFor(`pod ${name} gone`, async () => !(await q.rome.find(Resources.pods, name, NS)), {
        timeoutMs: 120_000,
      });
      return { node: pod.spec!.nodeName!, ok, ...why };
    };
    const check = "cd /data && sha256sum -c blob.sum";

    test("refused while a pod uses the claim, and for a node that does not exist", async () => {
      const mounted = await move("data-db-0", "--node", "rome-node-1");
      expect(mounted.code).not.toBe(0);
      expect(mounted.err).toContain("is used by pod(s) db-0");
      const nowhere = await move("data-db-0", "--node", "nowhere");
      expect(nowhere.code).not.toBe(0);
      expect(nowhere.err).toContain("node nowhere does not exist");
    });

    test("rome → milan → rome: the data identical (checksums), the next pod where the data is; a failure half-way leaves the original", async () => {
      await q.rome.create(Resources.persistentVolumeClaims, {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "moved", namespace: NS },
        spec: {
          storageClassName: "liqo",
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "16Mi" } },
        },
      } as KubeObject);
      const written = await once(
        "writer",
        "mkdir -p /data/sub && head -c 3000000 /dev/urandom > /data/blob && echo hi > /data/sub/f && cd /data && sha256sum blob sub/f > blob.sum",
        { nodeSelector: { "kubernetes.io/hostname": "rome-node-1" } },
      );
      expect(written).toEqual({ node: "rome-node-1", ok: true });
      const original = await q.rome.get<Claim>(Resources.persistentVolumeClaims, "moved", NS);

      // Interrupted by its deadline: the original claim and volume stay, the temporary claim goes.
      const cut = await move("moved", "--node", "liqo-milan", "--timeout", "2s");
      expect(cut.code).not.toBe(0);
      expect(cut.err).toContain("is untouched");
      expect((await q.rome.get<Claim>(Resources.persistentVolumeClaims, "moved", NS)).metadata.uid).toBe(
        original.metadata.uid,
      );
      await waitFor(
        "the temporary claim gone",
        async () => !(await q.rome.find(Resources.persistentVolumeClaims, "moved-liqo-move", NS)),
        { timeoutMs: 120_000 },
      );

      const there = await move("moved", "--node", "liqo-milan");
      // Both copies (into the temporary claim, then into the claim made again) verified the same files.
      expect(there.err.match(/verified 3 files, digest [0-9a-f]{64}/g)).toHaveLength(2);
      expect(there.code).toBe(0);
      expect(await once("reader-milan", check)).toEqual({ node: "liqo-milan", ok: true });

      const back = await move("moved", "--node", "rome-node-1");
      // Both copies (into the temporary claim, then into the claim made again) verified the same files.
      expect(back.err.match(/verified 3 files, digest [0-9a-f]{64}/g)).toHaveLength(2);
      expect(back.code).toBe(0);
      expect(await once("reader-rome", check)).toEqual({ node: "rome-node-1", ok: true });
      await q.rome.delete(Resources.persistentVolumeClaims, "moved", NS);
    }, 600_000);
  });

  describe("milan changes the class it offers, the peering running", () => {
    const DEFAULT = "storageclass.kubernetes.io/is-default-class";
    const makeDefault = (name: string, on: boolean) =>
      q.milan.mergePatch(storageClasses, name, undefined, { metadata: { annotations: { [DEFAULT]: String(on) } } });
    /** The classes of rome's offer from milan, as `name` or `name (default)` (the server orders the keys). */
    const offered = (want: string[]) =>
      waitFor(
        `rome's offer from milan: [${want.join(", ")}]`,
        async () => {
          const offers = await q.rome.list<
            KubeObject & { spec: { storageClasses?: { storageClassName: string; default?: boolean }[] } }
          >(ResourceOfferResource);
          const got = (offers.items[0]?.spec.storageClasses ?? []).map(
            (c) => `${c.storageClassName}${c.default ? " (default)" : ""}`,
          );
          return JSON.stringify(got) === JSON.stringify(want);
        },
        { timeoutMs: 120_000, intervalMs: 1000 },
      );
    const storageLabel = (want: string | undefined) =>
      waitFor(
        `liqo-milan's storage label ${want ?? "gone"}`,
        async () =>
          (await q.rome.get(Resources.nodes, "liqo-milan")).metadata.labels?.["storage.liqo.io/available"] === want,
        { timeoutMs: 120_000, intervalMs: 1000 },
      );
    /** The class liqo-milan's new claims get: once shown, the virtual kubelet uses it. */
    const storageClassShown = (want: string | undefined) =>
      waitFor(
        `liqo-milan's storage class annotation ${want ?? "gone"}`,
        async () =>
          (await q.rome.get(Resources.nodes, "liqo-milan")).metadata.annotations?.["storage.liqo.io/storage-class"] ===
          want,
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    const copyIn = (name: string) =>
      q.milan.list<Claim>(Resources.persistentVolumeClaims).then((l) => l.items.find((c) => c.metadata.name === name));

    test("a new default class in milan: offered, and new claims get it; claims already there keep theirs", async () => {
      // A class of the same provisioner that does not allow expansion, made milan's default.
      await q.milan.create(storageClasses, {
        apiVersion: "storage.k8s.io/v1",
        kind: "StorageClass",
        metadata: { name: "fixed" },
        provisioner: "rig.liqo.io/local-path",
        volumeBindingMode: "WaitForFirstConsumer",
        reclaimPolicy: "Delete",
      } as KubeObject);
      await makeDefault("local-path", false);
      await makeDefault("fixed", true);
      await offered(["fixed (default)"]);
      // The offer reaches rome first, then the virtual kubelet: a claim made in between still gets
      // the old class. The node's annotation says when the new one is in force.
      await storageClassShown("fixed");
      expect((await q.rome.get(Resources.nodes, "liqo-milan")).metadata.labels?.["storage.liqo.io/available"]).toBe(
        "true",
      );

      await q.rome.create(Resources.persistentVolumeClaims, {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "after-change", namespace: NS },
        spec: { storageClassName: "liqo", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "8Mi" } } },
      } as KubeObject);
      await q.rome.create(
        Resources.pods,
        claimScriptPod({
          name: "after-change",
          namespace: NS,
          claim: "after-change",
          script: "exec sleep 100000",
          placement: { nodeSelector: { "liqo.io/type": "virtual-node" } },
        }),
      );
      const copy = await waitFor(
        "milan's copy of the new claim bound",
        async () => {
          const c = await copyIn("after-change");
          return c?.status?.phase === "Bound" ? c : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      expect(copy.spec?.storageClassName).toBe("fixed");
      const old = (await q.milan.list<Claim>(Resources.persistentVolumeClaims)).items.filter((c) =>
        c.metadata.name?.startsWith("data-db-"),
      );
      expect(old.map((c) => c.spec?.storageClassName)).toEqual(["local-path"]);
      const failed = (await claimEvents(old[0]!.metadata.name!)).filter((e) => e.reason === "ReflectionFailed");
      expect(failed).toEqual([]);
    }, 300_000);

    test("expanding a claim of a class that does not allow it: milan's refusal comes home, the claim keeps its size", async () => {
      await q.rome.mergePatch(Resources.persistentVolumeClaims, "after-change", NS, {
        spec: { resources: { requests: { storage: "16Mi" } } },
      });
      const e = await waitFor(
        "milan's refusal on the claim",
        async () =>
          (await claimEvents("after-change")).find((x) => x.type === "Warning" && /resize/.test(x.message ?? "")),
        { timeoutMs: 120_000, intervalMs: 1000 },
      );
      expect(e.message).toContain("storageclass that provisions the pvc must support resize");
      const claim = await q.rome.get<Claim>(Resources.persistentVolumeClaims, "after-change", NS);
      expect(claim.status?.phase).toBe("Bound");
      expect(storageBytes(claim.status?.capacity?.storage)).toBe(storageBytes("8Mi"));
      expect(storageBytes((await copyIn("after-change"))?.spec?.resources?.requests?.storage)).toBe(
        storageBytes("8Mi"),
      );
      await q.rome.delete(Resources.pods, "after-change", NS, { gracePeriodSeconds: 0 });
      await q.rome.delete(Resources.persistentVolumeClaims, "after-change", NS);
    }, 180_000);

    test("no default class left in milan: nothing offered, the storage label goes; a default again: it comes back", async () => {
      await makeDefault("fixed", false);
      await offered([]);
      await storageLabel(undefined);
      await storageClassShown(undefined);
      await makeDefault("local-path", true);
      await offered(["local-path (default)"]);
      await storageLabel("true");
      await storageClassShown("local-path");
      await q.milan.delete(storageClasses, "fixed");
    }, 240_000);
  });

  describe("unoffloading with data in the peer", () => {
    test("refused without --yes, naming the claims whose data would go; with --yes milan's copies go and the claims stay", async () => {
      const unoffload = async (...extra: string[]) => {
        const proc = Bun.spawn(
          [...liqoctl, "unoffload", "namespace", NS, `--kubeconfig=${q.kubeconfig("rome")}`, ...extra],
          { stdout: "pipe", stderr: "pipe" },
        );
        const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
        return { out, err, code: await proc.exited };
      };
      const refused = await unoffload();
      expect(refused.err).toMatch(
        /unoffloading namespace liqo-demo deletes the volumes of 1 claim\(s\).*liqo-demo\/data-db-[01].*rerun with --yes/,
      );
      expect(refused.code).not.toBe(0);
      expect(await q.rome.find(NamespaceOffloadingResource, "offloading", NS)).toBeDefined();
      const remoteClaim = () =>
        q.milan
          .list<Claim>(Resources.persistentVolumeClaims)
          .then((l) => l.items.filter((c) => c.metadata.name?.startsWith("data-db-")));
      expect(await remoteClaim()).toHaveLength(1);

      const done = await unoffload("--yes");
      expect(done.code).toBe(0);
      await waitFor("milan's copy of the claim gone", async () => (await remoteClaim()).length === 0, {
        timeoutMs: 120_000,
      });
      const claims = await q.rome.list<Claim>(Resources.persistentVolumeClaims, { namespace: NS });
      expect(claims.items.filter((c) => c.metadata.name?.startsWith("data-db-")).map((c) => c.status?.phase)).toEqual([
        "Bound",
        "Bound",
      ]);
    }, 240_000);
  });
}
