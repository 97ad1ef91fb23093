// Liqo's stateful applications tutorial on real nodes, as users run it: the in-cluster quick start
// (rome peered with milan, each with the rig's local-path provisioner as its default class), then a
// replicated PostgreSQL built from Debian packages (tests/rig/images.ts, `postgres`) as a
// StatefulSet on the `liqo` class: the primary in rome, a streaming standby in milan that copies
// the primary with pg_basebackup and then streams its WAL through the network fabric (the Service
// db-primary reflected to milan, its endpoint remapped). Rows written in rome are read in milan;
// each pod deleted comes back in its cluster with its data; and `liqoctl move volume` across a
// fabric that is down is refused before anything changes.
//
// Run by storage-incluster.test.ts on the clusters it shares with the storage tests, which starts
// the quick start, builds the image and imports it into each real node, and labels rome-node-1
// region center; removeStatefulTutorial leaves no claim or volume behind for the tests after it.
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import type { InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { liqoctl } from "../quickstart/install.ts";
import { extraImageRefs } from "../rig/images.ts";
import { claimScriptPod } from "../support/claim-pod.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { waitFor } from "../support/wait.ts";

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };
type Claim = KubeObject & { spec?: { volumeName?: string; storageClassName?: string }; status?: { phase?: string } };

const NS = "liqo-demo";
const PSQL = "/usr/lib/postgresql/15/bin/psql";
let q: InClusterQuickstart;

const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);

/** The tutorial's manifest, as a user applies it. */
const MANIFEST = join(import.meta.dir, "../../docs/examples/stateful-postgres.yaml");

/** psql in a pod (the standby's through the virtual kubelet), as the superuser over the local socket. */
async function sql(pod: string, query: string) {
  const r = await kubectl(
    "rome",
    "exec",
    "-n",
    NS,
    pod,
    "--",
    PSQL,
    "-U",
    "postgres",
    "-At",
    "-v",
    "ON_ERROR_STOP=1",
    "-c",
    query,
  );
  return { out: r.out.trim(), err: r.err.trim(), code: r.code };
}

/** The same, retried until it succeeds and `accept` likes the answer. */
function sqlUntil(pod: string, query: string, accept: (out: string) => boolean, what: string, timeoutMs = 180_000) {
  let last = "";
  return waitFor(
    `${what} (${pod}: ${query})`,
    async () => {
      const r = await sql(pod, query);
      last = r.code === 0 ? r.out : r.err;
      return r.code === 0 && accept(r.out) ? r.out : undefined;
    },
    { timeoutMs, intervalMs: 1000, describe: () => last },
  );
}

/** The whole table in one line: row count and an MD5 of every row in order. */
const DIGEST =
  "SELECT count(*) || ' ' || md5(coalesce(string_agg(id || ':' || item, ',' ORDER BY id), '')) FROM orders";

const running = (name: string, notUid?: string) =>
  waitFor(
    `pod ${name} Running and Ready${notUid ? " again" : ""}`,
    async () => {
      const p = await q.rome.find<Pod & { status?: { conditions?: { type: string; status: string }[] } }>(
        Resources.pods,
        name,
        NS,
      );
      const ready = p?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      return p?.status?.phase === "Running" && ready && p.metadata.uid !== notUid && !p.metadata.deletionTimestamp
        ? p
        : undefined;
    },
    {
      timeoutMs: 300_000,
      intervalMs: 1000,
      describe: async () => (await q.rome.find<Pod>(Resources.pods, name, NS))?.status,
    },
  );

/** The tutorial's tests, on a quick start already up with the postgres image in every real node. */
export function statefulTutorial(quickstart: () => InClusterQuickstart): void {
  beforeAll(() => {
    q = quickstart();
  });

  describe("a replicated PostgreSQL across two clusters on the liqo class", () => {
    const uids: Record<string, string> = {};

    test("the primary runs in rome and the standby in milan, each on a volume of the liqo class where it runs", async () => {
      expect(readFileSync(MANIFEST, "utf8")).toContain(`image: ${extraImageRefs.postgres}`);
      const applied = await kubectl("rome", "apply", "-n", NS, "-f", MANIFEST);
      expect(applied.err).toBe("");
      expect(applied.out.trim().split("\n").sort()).toEqual([
        "secret/db-auth created",
        "service/db-primary created",
        "statefulset.apps/db created",
      ]);
      const primary = await running("db-0");
      const standby = await running("db-1");
      uids["db-0"] = primary.metadata.uid!;
      uids["db-1"] = standby.metadata.uid!;
      expect(primary.spec?.nodeName).toBe("rome-node-1");
      expect(standby.spec?.nodeName).toBe("liqo-milan");
      for (const name of ["data-db-0", "data-db-1"]) {
        const c = await q.rome.get<Claim>(Resources.persistentVolumeClaims, name, NS);
        expect(c.spec?.storageClassName).toBe("liqo");
        expect(c.status?.phase).toBe("Bound");
      }
      // The standby's data lives in milan: its claim there, with milan's class, bound.
      const inMilan = (await q.milan.list<Claim>(Resources.persistentVolumeClaims)).items.filter(
        (c) => c.metadata.name === "data-db-1",
      );
      expect(inMilan.map((c) => [c.spec?.storageClassName, c.status?.phase])).toEqual([["local-path", "Bound"]]);
      expect(await sql("db-0", "SELECT pg_is_in_recovery()")).toMatchObject({ out: "f", code: 0 });
      expect(await sql("db-1", "SELECT pg_is_in_recovery()")).toMatchObject({ out: "t", code: 0 });
    }, 600_000);

    test("rows written in rome are read in milan: the standby streams the primary's WAL through the network fabric, and refuses writes", async () => {
      expect(Object.keys(uids)).toHaveLength(2);
      await sqlUntil(
        "db-0",
        "SELECT state FROM pg_stat_replication",
        (o) => o === "streaming",
        "one standby streaming",
      );
      const written = await sql(
        "db-0",
        "CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL); INSERT INTO orders SELECT g, md5(g::text) FROM generate_series(1, 5000) g",
      );
      expect(written.code).toBe(0);
      const digest = (await sql("db-0", DIGEST)).out;
      expect(digest).toStartWith("5000 ");
      expect(await sqlUntil("db-1", DIGEST, (o) => o === digest, "the standby has every row")).toBe(digest);
      const refused = await sql("db-1", "INSERT INTO orders VALUES (0, 'from milan')");
      expect(refused.code).not.toBe(0);
      expect(refused.err).toContain("cannot execute INSERT in a read-only transaction");
      expect((await sql("db-0", "SELECT count(*) FROM orders WHERE id = 0")).out).toBe("0");
    }, 300_000);

    test("the standby deleted comes back in milan with its data and catches up on what it missed; the primary deleted comes back in rome with its data (data gravity)", async () => {
      expect(Object.keys(uids)).toHaveLength(2);
      await q.rome.delete(Resources.pods, "db-1", NS, { uid: uids["db-1"] });
      // Written while the standby is away.
      expect(
        (await sql("db-0", "INSERT INTO orders SELECT g, md5(g::text) FROM generate_series(5001, 6000) g")).code,
      ).toBe(0);
      const standby = await running("db-1", uids["db-1"]);
      expect(standby.spec?.nodeName).toBe("liqo-milan");
      // Its log says it started from its own data directory: no second pg_basebackup.
      const log = await kubectl("rome", "logs", "-n", NS, "db-1");
      expect(log.out).toContain("starting postgres (standby)");
      expect(log.out).not.toContain("pg_basebackup from");
      const digest = (await sql("db-0", DIGEST)).out;
      expect(digest).toStartWith("6000 ");
      expect(await sqlUntil("db-1", DIGEST, (o) => o === digest, "the standby caught up")).toBe(digest);

      await q.rome.delete(Resources.pods, "db-0", NS, { uid: uids["db-0"] });
      const primary = await running("db-0", uids["db-0"]);
      expect(primary.spec?.nodeName).toBe("rome-node-1");
      expect(await sqlUntil("db-0", DIGEST, (o) => o === digest, "the primary has its rows")).toBe(digest);
      await sqlUntil(
        "db-0",
        "SELECT state FROM pg_stat_replication",
        (o) => o === "streaming",
        "the standby streaming again",
      );
      expect((await sql("db-0", "INSERT INTO orders VALUES (6001, 'after both restarts')")).code).toBe(0);
      await sqlUntil(
        "db-1",
        "SELECT item FROM orders WHERE id = 6001",
        (o) => o === "after both restarts",
        "the new row in milan",
      );
    }, 900_000);
  });

  describe("liqoctl move volume across a network fabric that is down", () => {
    const scaleGateway = async (cluster: "rome" | "milan", n: number) => {
      expect((await kubectl(cluster, "scale", "-n", "liqo", "deploy/liqo-gateway", `--replicas=${n}`)).code).toBe(0);
      await waitFor(
        `${cluster}'s gateway pods ${n ? "Ready" : "gone"}`,
        async () => {
          const pods = (
            await q[cluster].list<Pod & { status?: { conditions?: { type: string; status: string }[] } }>(
              Resources.pods,
              {
                namespace: "liqo",
                labelSelector: "app.kubernetes.io/name=liqo-gateway",
              },
            )
          ).items;
          const ready = pods.filter((p) =>
            p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          );
          return n ? ready.length >= n : pods.length === 0;
        },
        { timeoutMs: 180_000 },
      );
    };
    const move = (...args: string[]) =>
      Bun.spawn([...liqoctl, "move", "volume", ...args, `--kubeconfig=${q.kubeconfig("rome")}`], {
        stdout: "pipe",
        stderr: "pipe",
      });
    const outcome = async (p: ReturnType<typeof move>) => {
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
      return { out: out + err, code: await p.exited };
    };
    /** A pod on `node` that runs `script` on the claim and finishes. */
    const job = (name: string, node: Record<string, string>, script: string) =>
      claimScriptPod({ name, namespace: NS, claim: "scratch", script, placement: { nodeSelector: node } });
    const finished = (name: string) =>
      waitFor(
        `pod ${name} Succeeded`,
        async () => {
          const p = await q.rome.find<Pod>(Resources.pods, name, NS);
          if (p?.status?.phase === "Failed") throw new Error(`pod ${name} failed`);
          return p?.status?.phase === "Succeeded" ? p : undefined;
        },
        {
          timeoutMs: 240_000,
          intervalMs: 1000,
          describe: async () => (await q.rome.find<Pod>(Resources.pods, name, NS))?.status,
        },
      );
    const sums = async (pod: string) => (await kubectl("rome", "logs", "-n", NS, pod)).out.trim();

    test("rome's gateway down: refused at once naming the failed checks, the claim and its data untouched; the gateway back: the same move succeeds and the data in milan is identical", async () => {
      await q.rome.create(Resources.persistentVolumeClaims, {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "scratch", namespace: NS },
        spec: {
          storageClassName: "liqo",
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "32Mi" } },
        },
      } as KubeObject);
      await q.rome.create(
        Resources.pods,
        job(
          "scratch-writer",
          { "kubernetes.io/hostname": "rome-node-1" },
          "head -c 4000000 /dev/urandom > /data/blob && date > /data/when && cd /data && sha256sum blob when",
        ),
      );
      await finished("scratch-writer");
      const written = await sums("scratch-writer");
      expect(written.split("\n")).toHaveLength(2);
      await q.rome.delete(Resources.pods, "scratch-writer", NS, { gracePeriodSeconds: 0 });
      const before = await q.rome.get<Claim>(Resources.persistentVolumeClaims, "scratch", NS);

      await scaleGateway("rome", 0);
      try {
        const refused = await outcome(move("scratch", "-n", NS, "--node", "liqo-milan"));
        expect(refused.code).not.toBe(0);
        expect(refused.out).toContain(`the copy of ${NS}/scratch crosses the network fabric to milan, which is down: `);
        expect(refused.out).toContain("active gateway here: no Ready gateway pod");
        expect(refused.out).toContain("Nothing was changed");
        // Nothing was changed: the same claim on the same volume, no temporary claim, no copy pods.
        const after = await q.rome.get<Claim>(Resources.persistentVolumeClaims, "scratch", NS);
        expect([after.metadata.uid, after.spec?.volumeName]).toEqual([before.metadata.uid, before.spec?.volumeName]);
        expect(await q.rome.find(Resources.persistentVolumeClaims, "scratch-liqo-move", NS)).toBeUndefined();
        const pods = (await q.rome.list(Resources.pods, { namespace: NS })).items.map((p) => p.metadata.name!);
        expect(pods.filter((n) => n.startsWith("liqo-move-"))).toEqual([]);
      } finally {
        await scaleGateway("rome", 1);
      }

      // The fabric back: the move goes through (retried while the tunnel comes back up) and milan has the same bytes.
      let last = "";
      await waitFor(
        "liqoctl move volume scratch to liqo-milan succeeding",
        async () => {
          const r = await outcome(move("scratch", "-n", NS, "--node", "liqo-milan", "--timeout", "5m"));
          last = r.out;
          if (r.code !== 0 && !r.out.includes("which is down")) throw new Error(`the move failed: ${r.out}`);
          return r.code === 0 ? r : undefined;
        },
        { timeoutMs: 420_000, intervalMs: 3000, describe: () => last },
      );
      await q.rome.create(
        Resources.pods,
        job("scratch-reader", { "liqo.io/type": "virtual-node" }, "cd /data && sha256sum blob when"),
      );
      const reader = await finished("scratch-reader");
      expect(reader.spec?.nodeName).toBe("liqo-milan");
      expect(await sums("scratch-reader")).toBe(written);
    }, 900_000);
  });
}

/**
 * What the tutorial leaves removed (its StatefulSet, Service and Secret, the claims data-db-0,
 * data-db-1 and scratch, their pods), waited for until neither cluster has a claim or a volume
 * left: the storage tests after it make a StatefulSet of the same name and count twin claims,
 * copies in milan and the claims whose data is in milan.
 */
export async function removeStatefulTutorial(qs: InClusterQuickstart): Promise<void> {
  const k = (...args: string[]) => kubectlOn(qs, "rome", ...args);
  const gone = await k(
    "delete",
    "-n",
    NS,
    "--ignore-not-found",
    "--wait=false",
    "statefulset/db",
    "service/db-primary",
    "secret/db-auth",
    "pod/scratch-writer",
    "pod/scratch-reader",
  );
  if (gone.code !== 0) throw new Error(`removing the tutorial's objects: ${gone.err}`);
  const left = async () =>
    (await qs.rome.list(Resources.pods, { namespace: NS })).items
      .map((p) => p.metadata.name!)
      .filter((n) => /^(db-\d+|scratch-|liqo-move-)/.test(n));
  await waitFor("the tutorial's pods gone", async () => (await left()).length === 0, {
    timeoutMs: 180_000,
    intervalMs: 1000,
    describe: left,
  });
  const claims = await k("delete", "pvc", "--all", "-n", NS, "--wait=false");
  if (claims.code !== 0) throw new Error(`removing the tutorial's claims: ${claims.err}`);
  const remaining = async () => {
    const names = async (c: "rome" | "milan", r: ResourceRef) =>
      (await qs[c].list(r)).items.map((o) => `${c} ${r.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`);
    return [
      ...(await names("rome", Resources.persistentVolumeClaims)),
      ...(await names("rome", Resources.persistentVolumes)),
      ...(await names("milan", Resources.persistentVolumeClaims)),
      ...(await names("milan", Resources.persistentVolumes)),
    ];
  };
  await waitFor("no claim or volume left in rome or milan", async () => (await remaining()).length === 0, {
    timeoutMs: 240_000,
    intervalMs: 1000,
    describe: remaining,
  });
}
