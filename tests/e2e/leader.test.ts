// Leader election of `liqo controller-manager` on a real API server: two processes share a Lease,
// one runs the controllers, the other stands by (and is ready); killing the leader hands the Lease
// to the standby once the record has not changed for the lease duration; a leader whose Lease is
// taken steps down and exits; bad flags fail before anything starts. And the elector itself: a
// standby that can tell the holder's container is dead takes over without waiting for expiry.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { installCrds } from "../../core/apis/index.ts";
import { createLeaderElector, microTime } from "../../core/kube/leader.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { freePort } from "../rig/ports.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

const liqo = join(import.meta.dir, "../../cli/liqo.ts");
const ns = "liqo";
const LEASE = "liqo-controller-manager";
let rig: TestRig;
let client: KubeClient;
const procs: Bun.Subprocess[] = [];
let spawned = 0;

// Output goes to files: an unread pipe would fill up and block a chatty process.
interface Replica {
  proc: Bun.Subprocess;
  admin: string;
  log: string;
}
type LeaderView = { enabled: boolean; leader: boolean; identity: string; holder?: string };
type Lease = KubeObject & { spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string } };

function run(extra: string[]): { proc: Bun.Subprocess; log: string } {
  mkdirSync(join(rig.dir, "logs"), { recursive: true });
  const log = join(rig.dir, "logs", `controller-manager-${++spawned}.log`);
  const proc = Bun.spawn(
    [
      process.execPath,
      liqo,
      "controller-manager",
      "--kubeconfig",
      rig.clusters[0]!.kubeconfig,
      "--cluster-id",
      "11111111-2222-3333-4444-555555555555",
      "--cluster-name",
      "rome",
      "--liqo-namespace",
      ns,
      "--controllers",
      "shadowpod",
      ...extra,
    ],
    { stdout: Bun.file(log), stderr: Bun.file(`${log}.err`), stdin: "ignore" },
  );
  procs.push(proc);
  return { proc, log };
}

async function start(extra: string[] = []): Promise<Replica> {
  const port = await freePort();
  const { proc, log } = run([
    "--leader-elect",
    "--leader-elect-lease-duration",
    "6s",
    "--leader-elect-renew-deadline",
    "4s",
    "--leader-elect-retry-period",
    "1s",
    `--admin-address=127.0.0.1:${port}`,
    ...extra,
  ]);
  return { proc, log, admin: `http://127.0.0.1:${port}` };
}

async function view(r: Replica): Promise<LeaderView | undefined> {
  return fetch(`${r.admin}/views/leader`, { signal: AbortSignal.timeout(3000) }).then(
    (res) => (res.ok ? (res.json() as Promise<LeaderView>) : undefined),
    () => undefined,
  );
}

async function controllers(r: Replica): Promise<{ name: string; state: string }[]> {
  return (await fetch(`${r.admin}/views/controllers`)).json() as Promise<{ name: string; state: string }[]>;
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["leader"], nodes: 1 });
  client = rig.client("leader");
  await installCrds(client);
  await client.create(Resources.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
}, 600_000);

afterAll(async () => {
  for (const p of procs) p.kill("SIGKILL");
  await rig?.down();
});

describe("controller-manager leader election", () => {
  let a: Replica;
  let b: Replica;
  let leader: Replica;
  let standby: Replica;
  let survivor: Replica;

  test("of two replicas one leads and runs the controllers, the other stands by and is ready", async () => {
    a = await start();
    b = await start();
    const views = await waitFor(
      "one replica to lead",
      async () => {
        const [va, vb] = [await view(a), await view(b)];
        return va && vb && va.leader !== vb.leader && ([va, vb] as const);
      },
      { timeoutMs: 120_000 },
    );
    [leader, standby] = views[0].leader ? [a, b] : [b, a];
    const leaderView = views[0].leader ? views[0] : views[1];
    const lease = await client.get<Lease>(Resources.leases, LEASE, ns);
    expect(lease.spec?.holderIdentity).toBe(leaderView.identity);
    expect(lease.spec?.leaseDurationSeconds).toBe(6);
    await waitFor(
      "the leader's controllers to run",
      async () => (await controllers(leader)).every((c) => c.state === "running"),
      { timeoutMs: 120_000 },
    );
    expect((await controllers(standby)).map((c) => c.state)).toEqual(["standby"]);
    for (const r of [leader, standby]) {
      await waitFor(
        "/readyz to answer 200",
        () =>
          fetch(`${r.admin}/readyz`).then(
            (res) => res.ok,
            () => false,
          ),
        { timeoutMs: 60_000 },
      );
    }
  }, 300_000);

  test("killing the leader hands the Lease to the standby", async () => {
    const before = (await view(leader))!.identity;
    leader.proc.kill("SIGKILL"); // no release: the standby must wait for the record to expire
    await leader.proc.exited;
    const killedAt = Date.now();
    const took = await waitFor(
      "the standby to take over",
      async () => (await view(standby))?.leader && Date.now() - killedAt,
      { timeoutMs: 120_000 },
    );
    console.log(`takeover after SIGKILL: ${took} ms (lease duration 6000 ms, retry period 1000 ms)`);
    const lease = await client.get<Lease>(Resources.leases, LEASE, ns);
    expect(lease.spec?.holderIdentity).toBe((await view(standby))!.identity);
    expect(lease.spec?.holderIdentity).not.toBe(before);
    await waitFor(
      "the new leader's controllers to run",
      async () => (await controllers(standby)).every((c) => c.state === "running"),
      { timeoutMs: 120_000 },
    );
  }, 300_000);

  test("a leader whose Lease is taken steps down and exits", async () => {
    const lease = await client.get<Lease>(Resources.leases, LEASE, ns);
    await client.replace(Resources.leases, {
      ...lease,
      spec: { ...lease.spec, holderIdentity: "intruder", leaseDurationSeconds: 3600 },
    });
    const code = await standby.proc.exited;
    expect(code).not.toBe(0);
    expect(readFileSync(`${standby.log}.err`, "utf8")).toContain("leader election lost");
  }, 120_000);

  test("a leader stopped with SIGTERM releases the Lease, so the next one leads at once", async () => {
    const lease = await client.get<Lease>(Resources.leases, LEASE, ns);
    await client.replace(Resources.leases, { ...lease, spec: { ...lease.spec, holderIdentity: "" } });
    const long = ["--leader-elect-lease-duration", "300s", "--leader-elect-renew-deadline", "200s"];
    // A long lease: only a release (not expiry) can hand it over within the deadline below.
    const first = await start(long);
    await waitFor("the first to lead", async () => (await view(first))?.leader, { timeoutMs: 120_000 });
    const second = await start(long);
    await waitFor("the second to be up as standby", async () => (await view(second))?.leader === false, {
      timeoutMs: 120_000,
    });
    first.proc.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);
    await waitFor("the second to lead after the release", async () => (await view(second))?.leader, {
      timeoutMs: 60_000,
    });
    survivor = second;
  }, 300_000);

  test("a released Lease goes to the replica that stood by, not to one started just before the release", async () => {
    // The gateway's case: the active pod is deleted, its replacement starts while it shuts down,
    // and the standby that is already running must take over rather than race the replacement.
    const long = ["--leader-elect-lease-duration", "300s", "--leader-elect-renew-deadline", "200s"];
    const standing = await start(long);
    const up = await waitFor("the standby up", async () => (await view(standing))?.leader === false && Date.now(), {
      timeoutMs: 120_000,
    });
    // Two retry periods of watching (1 s each here), counted on the holder's renewals.
    await waitFor(
      "the holder to renew for two retry periods while the standby watches",
      async () => {
        const lease = await client.get<Lease>(Resources.leases, LEASE, ns);
        return Date.parse(lease.spec?.renewTime ?? "") > up + 2500;
      },
      { timeoutMs: 60_000 },
    );
    const newcomer = await start(long);
    const newcomerUp = await waitFor(
      "the newcomer up as standby",
      async () => (await view(newcomer))?.leader === false && Date.now(),
      { timeoutMs: 120_000 },
    );
    // The newcomer sees the holder renew too (the replacement pod of a leader that is shutting down).
    await waitFor(
      "the holder to renew once more",
      async () => Date.parse((await client.get<Lease>(Resources.leases, LEASE, ns)).spec?.renewTime ?? "") > newcomerUp,
      { timeoutMs: 60_000 },
    );
    survivor.proc.kill("SIGTERM");
    expect(await survivor.proc.exited).toBe(0);
    const leaderNow = await waitFor(
      "one of them to lead after the release",
      async () => {
        const [s, n] = [await view(standing), await view(newcomer)];
        return s?.leader ? "standing" : n?.leader ? "newcomer" : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(leaderNow).toBe("standing");
    const lease = await client.get<Lease>(Resources.leases, LEASE, ns);
    expect(lease.spec?.holderIdentity).toBe((await view(standing))!.identity);
    expect((await view(newcomer))?.leader).toBe(false);
  }, 300_000);

  test("bad leader election flags fail before anything starts, naming the flag", async () => {
    const cases: [string[], RegExp][] = [
      [
        ["--leader-elect", "--leader-elect-lease-duration", "ten"],
        /--leader-elect-lease-duration "ten" is not a duration/,
      ],
      [
        ["--leader-elect", "--leader-elect-lease-duration", "5s", "--leader-elect-renew-deadline", "10s"],
        /renew-deadline .* must be shorter than --leader-elect-lease-duration/,
      ],
      [["--leader-elect", "--leader-elect-retry-period", "0s"], /retry-period .* must be positive/],
    ];
    for (const [flags, message] of cases) {
      const { proc, log } = run([...flags, "--admin-address=127.0.0.1:0"]);
      expect(await proc.exited).not.toBe(0);
      expect(readFileSync(`${log}.err`, "utf8") + readFileSync(log, "utf8")).toMatch(message);
    }
  }, 120_000);
});

describe("a standby that can tell the holder is gone", () => {
  // The holder is played by the test: it writes the Lease and renews it, then stops, as a SIGKILLed
  // process does. The lease duration is 10 minutes, so only holderGone can hand the Lease over
  // within the tests' deadlines.
  const lease = "gone-holder";
  const holder = "gw-a-1";
  let renewing: ReturnType<typeof setInterval> | undefined;
  let renewals = 0;
  let dead = false;
  const asked: string[] = [];
  let b: ReturnType<typeof createLeaderElector> | undefined;

  const renew = async () => {
    const l = await client.get<KubeObject & { spec: Record<string, unknown> }>(Resources.leases, lease, ns);
    await client.replace(Resources.leases, { ...l, spec: { ...l.spec, renewTime: microTime(Date.now()) } });
    renewals++;
  };

  beforeAll(async () => {
    await client.create(Resources.leases, {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: lease, namespace: ns },
      spec: { holderIdentity: holder, leaseDurationSeconds: 600, renewTime: microTime(Date.now()) },
    } as KubeObject);
    renewing = setInterval(() => renew().catch(() => undefined), 500);
  });

  afterAll(async () => {
    clearInterval(renewing);
    await b?.stop();
  });

  test("while the holder renews, the standby never asks and stays standby; once renewals stop and the holder's pod is dead, it takes over long before the Lease expires", async () => {
    b = createLeaderElector({
      client,
      namespace: ns,
      name: lease,
      identity: "gw-b-1",
      leaseDurationMs: 600_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 1_000,
      onStartedLeading() {},
      onStoppedLeading() {},
      async holderGone(h) {
        asked.push(h);
        return dead;
      },
    });
    b.start();
    // Renewals every 0.5 s are never overdue (1.5 retry periods): holderGone is not even consulted,
    // through 8 renewals (4 of the standby's 1 s retry periods).
    const from = renewals;
    await waitFor("8 renewals while the standby watches", async () => renewals - from >= 8, { timeoutMs: 30_000 });
    expect({ leader: b.isLeader(), asked }).toEqual({ leader: false, asked: [] });

    // The holder stops renewing, but its pod still runs (a holder cut off from the API server).
    clearInterval(renewing);
    await waitFor("the standby asking whether the holder is gone", async () => asked.length >= 2, {
      timeoutMs: 30_000,
    });
    expect(asked.every((h) => h === holder)).toBe(true);
    expect(b.isLeader()).toBe(false);

    // Its container dies: the standby takes over.
    dead = true;
    await waitFor("the standby leading", async () => b!.isLeader(), { timeoutMs: 30_000 });
    const taken = await client.get<KubeObject & { spec: { holderIdentity?: string; leaseTransitions?: number } }>(
      Resources.leases,
      lease,
      ns,
    );
    expect(taken.spec.holderIdentity).toBe("gw-b-1");
    expect(taken.spec.leaseTransitions).toBe(1);
  }, 90_000);
});

describe("a released Lease and a replica that just started (the gateway's Recreate rollout)", () => {
  const electors: ReturnType<typeof createLeaderElector>[] = [];
  afterAll(async () => {
    for (const e of electors) await e.stop();
  });

  const released = (name: string) =>
    client.create(Resources.leases, {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name, namespace: ns },
      // What a holder leaves when it stops cleanly: no holder, the record of its last renewal.
      spec: { holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(Date.now()) },
    } as KubeObject);
  const elector = (name: string, identity: string, standbyWaitMs?: number) => {
    const e = createLeaderElector({
      client,
      namespace: ns,
      name,
      identity,
      // Long periods: the default wait (two retry periods) would be 40 s.
      leaseDurationMs: 60_000,
      renewDeadlineMs: 40_000,
      retryPeriodMs: 20_000,
      standbyWaitMs,
      onStartedLeading() {},
      onStoppedLeading() {},
    });
    electors.push(e);
    e.start();
    return e;
  };

  test("with standbyWaitMs 0 (a single replica: no standby to prefer) it takes the Lease at its first attempt; by default it first watches for two retry periods", async () => {
    await released("lone-replica");
    await released("one-of-several");
    const lone = elector("lone-replica", "gw-lone-1", 0);
    const several = elector("one-of-several", "gw-new-1");
    await waitFor("the single replica leading", async () => lone.isLeader(), { timeoutMs: 10_000 });
    // The default one has read the Lease (its status shows the record) and stands by.
    await waitFor("the other replica having read its Lease", async () => several.status().renewTime !== undefined, {
      timeoutMs: 10_000,
    });
    expect(several.isLeader()).toBe(false);
    const taken = await client.get<Lease>(Resources.leases, "lone-replica", ns);
    expect(taken.spec?.holderIdentity).toBe("gw-lone-1");
    expect((await client.get<Lease>(Resources.leases, "one-of-several", ns)).spec?.holderIdentity).toBe("");
  }, 60_000);
});
