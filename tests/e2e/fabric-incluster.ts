// The data plane on real nodes, as users run it: the in-cluster quick start (liqo installed with
// liqoctl on two real-node clusters, peered with networking, liqo-demo offloaded), then traffic
// both ways through liqo's own gateways. Shared by the disjoint and the overlapping pod CIDR files.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { parsePrometheusText, type MetricFamily } from "../../core/metrics/index.ts";
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import {
  crossClusterAnswers,
  curlFromRome,
  runInClusterQuickstart,
  type InClusterQuickstart,
} from "../quickstart/in-cluster.ts";
import { liqoctl } from "../quickstart/install.ts";
import { findHelm } from "../../cli/install/helm.ts";
import { addressSeenByPeer } from "../../cli/test-network/run.ts";
import { rigImageRefs } from "../rig/images.ts";
import { RIG_LB_CLASS, startRigLoadBalancer } from "../rig/load-balancer.ts";
import { stopRealNodeNow } from "../rig/nodes.ts";
import { rigDown, killRigNow } from "../rig/rig.ts";
import { reapOrphanRigs } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { appDeployment } from "../support/deployment.ts";
import { waitFor } from "../support/wait.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { clustersetServices } from "./fabric-mcs.ts";
import { serviceContinuity } from "./fabric-continuity.ts";
import { blackHole, killPod, parseStream, recoveredAt, summarize } from "../chaos/traffic.ts";
import { truthCell, untrue, watchTruth } from "../chaos/truth.ts";

/** How many times every liqo role is SIGKILLed under traffic (the issue asks for once and repeatedly). */
const KILL_ROUNDS = 2;

type PodObject = KubeObject & {
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    podIP?: string;
    containerStatuses?: { restartCount?: number; state?: { waiting?: { reason?: string } } }[];
  };
};

export interface Exec {
  out: string;
  err: string;
  code: number;
}

/** overlapping: both clusters use 10.200.0.0/16; ha: liqo installed with --enable-ha (a standby gateway). */
export function fabricSuite(overlapping: boolean, ha = false): void {
  let q: InClusterQuickstart;
  const label = `${overlapping ? "overlapping" : "disjoint"} pod CIDRs${ha ? ", HA gateways" : ""}`;

  const kubectl = (cluster: string, ...args: string[]): Promise<Exec> => kubectlOn(q, cluster, ...args);
  /** A shell command in rome's client pod. */
  const inClient = (script: string): Promise<Exec> =>
    kubectl("rome", "exec", "-n", "liqo-demo", "curl", "--", "sh", "-c", script);

  /** Retries a command until its output matches, for paths that take a moment to converge. */
  async function until(what: string, run: () => Promise<Exec>, match: RegExp, timeoutMs = 120_000): Promise<Exec> {
    let last: Exec | undefined;
    return waitFor(
      what,
      async () => {
        last = await run();
        return last.code === 0 && match.test(last.out) ? last : undefined;
      },
      { timeoutMs, intervalMs: 1000, describe: () => last },
    );
  }

  const twinNamespace = async () => {
    const pods = await q.milan.list<PodObject>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" });
    return pods.items.find((p) => p.metadata.name === "nginx-remote")!.metadata.namespace!;
  };

  beforeAll(async () => {
    await reapOrphanRigs(testRigRoot);
    const dir = mkdtempSync(join(testRigRoot, "fabric-"));
    process.on("exit", () => {
      if (q) killRigNow(q.rig);
    });
    q = await runInClusterQuickstart({
      dir,
      owner: process.pid,
      overlappingPodCidrs: overlapping,
      ha,
      progress: process.env.RIG_VERBOSE ? (m) => console.error(`[fabric] ${m}`) : undefined,
    });
    console.log(
      `in-cluster quick start (${label}): ${Object.entries(q.timings)
        .map(([k, v]) => `${k} ${v.toFixed(0)}s`)
        .join(", ")}`,
    );
  }, 1_200_000);

  afterAll(async () => {
    if (q) await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
  }, 120_000);

  clustersetServices(() => q, label);
  if (!overlapping) serviceContinuity(() => q, label);

  /** kubectl on the virtual node's pods reaches the real containers in milan. */
  function virtualKubeletOnRealContainers() {
    test("kubectl logs -f follows the real container in milan", async () => {
      const proc = Bun.spawn(
        [
          q.kubectl,
          `--kubeconfig=${q.kubeconfig("rome")}`,
          "logs",
          "-f",
          "-n",
          "liqo-demo",
          "nginx-remote",
          "--tail=1",
        ],
        { stdout: "pipe", stderr: "pipe" },
      );
      const reader = proc.stdout.getReader();
      let seen = "";
      try {
        await curlFromRome(
          q,
          "http://liqo-demo.liqo-demo.svc.cluster.local/followed-by-logs-f",
          /Server name: nginx-remote/,
        );
        await waitFor(
          "the access line in the followed log",
          async () => {
            const { value, done } = await Promise.race([
              reader.read(),
              Bun.sleep(2000).then(() => ({ value: undefined, done: false })),
            ]);
            if (value) seen += new TextDecoder().decode(value);
            return !done && seen.includes("/followed-by-logs-f");
          },
          { timeoutMs: 60_000, describe: () => seen.slice(-500) },
        );
      } finally {
        proc.kill();
      }
      expect(seen).toContain("GET /followed-by-logs-f");
    }, 180_000);

    test("an image no node has shows as a pull error on the local pod; a crashing container's restarts are counted back", async () => {
      const onVirtual = {
        nodeSelector: { "liqo.io/type": "virtual-node" },
        tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
      };
      await q.rome.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "ghost", namespace: "liqo-demo" },
        spec: { ...onVirtual, containers: [{ name: "x", image: "example.invalid/nothing:1" }] },
      } as KubeObject);
      await q.rome.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "crasher", namespace: "liqo-demo" },
        spec: {
          ...onVirtual,
          containers: [
            { name: "x", image: "ghcr.io/liqo-bun/hello:0.1.0", command: ["sh", "-c", "echo crashing; exit 3"] },
          ],
        },
      } as KubeObject);
      const reason = await waitFor(
        "ghost's pull error on rome's pod",
        async () => {
          const r = (await q.rome.find<PodObject>(Resources.pods, "ghost", "liqo-demo"))?.status?.containerStatuses?.[0]
            ?.state?.waiting?.reason;
          return r && /ErrImagePull|ImagePullBackOff/.test(r) ? r : undefined;
        },
        {
          timeoutMs: 180_000,
          describe: async () => (await q.rome.find<PodObject>(Resources.pods, "ghost", "liqo-demo"))?.status,
        },
      );
      expect(reason).toMatch(/ErrImagePull|ImagePullBackOff/);
      const restarts = await waitFor(
        "crasher's restarts on rome's pod",
        async () => {
          const n =
            (await q.rome.find<PodObject>(Resources.pods, "crasher", "liqo-demo"))?.status?.containerStatuses?.[0]
              ?.restartCount ?? 0;
          return n >= 2 ? n : undefined;
        },
        {
          timeoutMs: 180_000,
          describe: async () => (await q.rome.find<PodObject>(Resources.pods, "crasher", "liqo-demo"))?.status,
        },
      );
      expect(restarts).toBeGreaterThanOrEqual(2);
      // The previous instance's log, read through the virtual kubelet from milan's kubelet (retried:
      // between two restarts the kubelet may be swapping which instance is "previous").
      const logs = await until(
        "crasher's previous log",
        () => kubectl("rome", "logs", "-n", "liqo-demo", "crasher", "--previous"),
        /crashing/,
        60_000,
      );
      expect(logs.out).toContain("crashing");
      for (const name of ["ghost", "crasher"]) await q.rome.delete(Resources.pods, name, "liqo-demo");
    }, 400_000);
  }

  /** liqoctl test network from rome; stdout and stderr apart. */
  async function testNetwork(...args: string[]): Promise<Exec> {
    const proc = Bun.spawn([...liqoctl, "test", "network", `--kubeconfig=${q.kubeconfig("rome")}`, ...args], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    return { out, err, code: await proc.exited };
  }

  /** No namespace of the self-test in either cluster (rome's carries the label, milan's twin the name). */
  async function noTestNamespaces(): Promise<void> {
    await waitFor(
      "no liqoctl test network namespace in rome or milan",
      async () => {
        const here = (await q.rome.list(Resources.namespaces, { labelSelector: "liqo.io/network-test=true" })).items;
        const there = (await q.milan.list(Resources.namespaces)).items.filter((n) =>
          n.metadata.name!.startsWith("liqo-netcheck-"),
        );
        return here.length === 0 && there.length === 0;
      },
      {
        timeoutMs: 120_000,
        describe: async () =>
          [...(await q.rome.list(Resources.namespaces)).items, ...(await q.milan.list(Resources.namespaces)).items]
            .map((n) => n.metadata.name)
            .filter((n) => n!.startsWith("liqo-netcheck-")),
      },
    );
  }

  function networkSelfTest() {
    test("liqoctl test network: every check passes (pods both ways, Services both ways, node → pod, DF path MTU, 1 MiB TCP) and nothing stays behind", async () => {
      const r = await testNetwork("milan");
      expect(r.out).toContain("Network test of milan: all 14 checks passed");
      for (const row of [
        "local pod → remote pod",
        "remote pod → local pod",
        "local pod → Service (remote endpoint)",
        "remote pod → reflected Service (local endpoint)",
        "local node → remote pod",
      ]) {
        expect(r.out).toMatch(new RegExp(`^${row.replace(/[()]/g, "\\$&")}\\s+passed\\s+answered by server-`, "m"));
      }
      // The tunnel's MTU (1500 on the gateway pod's eth0, minus 60) is what a DF ping finds, and one
      // byte more brings back "fragmentation needed" both ways.
      expect(r.out).toMatch(
        /^large packets local → remote \(DF\)\s+passed\s+path MTU 1440; 1441 bytes with DF: fragmentation needed came back/m,
      );
      expect(r.out).toMatch(/^large packets remote → local \(DF\)\s+passed\s+path MTU 1440;/m);
      expect(r.out).toMatch(/^TCP 1 MiB local → remote pod\s+passed\s+1048576 bytes received/m);
      if (overlapping) expect(r.err).toMatch(/remote at 10\.\d+\.\d+\.\d+ as seen here/);
      expect(r.code).toBe(0);
      await noTestNamespaces();
    }, 400_000);
  }

  /** Bad input, and Ctrl-C in the middle of a run. */
  function networkSelfTestInterrupted() {
    test("liqoctl test network: bad input is named; Ctrl-C in the middle removes the test namespace in both clusters (exit 130)", async () => {
      const unknown = await testNetwork("venice");
      expect(unknown.err).toContain("no peering named venice (liqoctl status lists them: milan)");
      expect(unknown.code).toBe(1);
      const inverted = await testNetwork("--timeout", "30s", "--check-timeout", "1m");
      expect(inverted.err).toContain("--check-timeout 1m must be shorter than --timeout 30s");
      expect(inverted.code).toBe(2);
      const proc = Bun.spawn([...liqoctl, "test", "network", `--kubeconfig=${q.kubeconfig("rome")}`], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const ns = await waitFor(
        "the self-test's server pods in rome",
        async () => {
          const pods = (await q.rome.list<PodObject>(Resources.pods, { labelSelector: "liqo.io/network-test=true" }))
            .items;
          return pods.length ? pods[0]!.metadata.namespace : undefined;
        },
        { timeoutMs: 120_000 },
      );
      await waitFor(
        "its twin namespace in milan",
        async () => (await q.milan.list(Resources.namespaces)).items.some((n) => n.metadata.name!.startsWith(ns!)),
        { timeoutMs: 120_000 },
      );
      proc.kill("SIGINT");
      const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      expect(err).toContain(`interrupted: removing the test namespace`);
      expect(err).toContain(`removing namespace ${ns} (and its copy in milan)`);
      expect(out).not.toContain("Network test of milan");
      expect(await proc.exited).toBe(130);
      await noTestNamespaces();
    }, 400_000);
  }

  /** The fabric down: the peer's gateway (only traffic can tell), then ours (the preflight tells). */
  function networkSelfTestFabricDown() {
    test("liqoctl test network with the fabric down: milan's gateway gone → the checks fail by their deadline naming the tunnel; rome's gone too → said at once, no pod started; both back → traffic again", async () => {
      /** Scales a cluster's gateways; to zero, returns once its gateway pods are gone. */
      const scale = async (cluster: "rome" | "milan", n: number) => {
        expect((await kubectl(cluster, "scale", "-n", "liqo", "deploy/liqo-gateway", `--replicas=${n}`)).code).toBe(0);
        if (n > 0) return;
        await waitFor(
          `${cluster}'s gateway pods gone`,
          async () =>
            (
              await q[cluster].list(Resources.pods, {
                namespace: "liqo",
                labelSelector: "app.kubernetes.io/name=liqo-gateway",
              })
            ).items.length === 0,
          { timeoutMs: 120_000 },
        );
      };
      const replicas = ha ? 2 : 1;
      await scale("milan", 0);
      const dark = await testNetwork("--basic", "--check-timeout", "8s", "--timeout", "3m");
      expect(dark.out).toMatch(
        /^local pod → remote pod\s+FAILED\s+.*likely cause: nothing crosses the tunnel \(the peer's pods are remapped to /m,
      );
      expect(dark.out).toMatch(
        /^remote pod → local pod\s+FAILED\s+.*likely cause: nothing crosses the tunnel from the peer/m,
      );
      expect(dark.out).toContain("Network test of milan: 2 of 7 checks failed");
      expect(dark.code).toBe(1);
      await noTestNamespaces();
      await scale("rome", 0);
      const down = await testNetwork();
      expect(down.out).toContain("Network test of milan: the fabric is down, no pod was started");
      expect(down.out).toMatch(
        /^active gateway here\s+FAILED\s+no Ready gateway pod labelled net\.liqo\.io\/gateway-role=active in liqo \(0 gateway pods/m,
      );
      expect(down.out).toMatch(/^local pod → remote pod\s+skipped/m);
      expect(down.code).toBe(1);
      expect((await q.rome.list(Resources.namespaces, { labelSelector: "liqo.io/network-test=true" })).items).toEqual(
        [],
      );
      await scale("rome", replicas);
      await scale("milan", replicas);
      const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      expect(
        await curlFromRome(q, `http://${remote.status!.podIP}/after-fabric-down`, /Server name: nginx-remote/, 240_000),
      ).toContain("URI: /after-fabric-down");
    }, 600_000);
  }

  /**
   * Faults during a steady stream of requests from rome's client pod to a Service backed by the pod
   * in milan: every liqo pod's processes SIGKILLed in both clusters (one pod per role; the active
   * gateway; every route agent), then the link between the clusters black-holed for 60 s. Counts
   * what the stream lost; asserts the stream recovers, the remote pod is neither lost nor doubled,
   * and the virtual node says NotReady while milan is unreachable (and Ready after).
   */
  function faultsUnderTraffic() {
    test("faults during a request stream to a Service backed by milan's pod: every liqo role killed, then the link black-holed for 60 s; the stream recovers, the remote pod stays one, the virtual node tells the truth (Ready through the kills, NotReady while dark)", async () => {
      const url = "http://stream.liqo-demo.svc.cluster.local/";
      await kubectl("rome", "label", "pod", "-n", "liqo-demo", "nginx-remote", "stream=yes", "--overwrite");
      await q.rome.create(Resources.services, {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "stream", namespace: "liqo-demo" },
        spec: { selector: { stream: "yes" }, ports: [{ name: "web", port: 80, targetPort: 80 }] },
      } as KubeObject);
      await curlFromRome(q, url, /Server name: nginx-remote/, 120_000);
      const twin = await twinNamespace();
      const remoteUids = async () =>
        (await q.milan.list<PodObject>(Resources.pods, { namespace: twin })).items
          .filter((p) => p.metadata.name === "nginx-remote")
          .map((p) => p.metadata.uid);
      const uidsBefore = await remoteUids();
      expect(uidsBefore.length).toBe(1);

      // The stream: one request every 0.2 s (2 s timeout), "<ms> <status>" per line, until /tmp/stop.
      const loop = `while [ ! -f /tmp/stop ]; do echo "$(date +%s%3N) $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 ${url})" >> /tmp/stream; sleep 0.2; done`;
      const started = await inClient(
        `rm -f /tmp/stream /tmp/stop; (setsid sh -c '${loop.replace(/'/g, "'\\''")}' >/dev/null 2>&1 &); echo streaming`,
      );
      expect(started.out).toContain("streaming");
      const samples = async () =>
        parseStream((await kubectl("rome", "exec", "-n", "liqo-demo", "curl", "--", "cat", "/tmp/stream")).out);
      const recovery = (from: number, what: string) =>
        waitFor(what, async () => recoveredAt(await samples(), from), {
          timeoutMs: 300_000,
          intervalMs: 2000,
          // The stream's last answers, and what rome says of the pod behind the Service.
          describe: async () => {
            const pod = await q.rome.find<PodObject & { status?: { conditions?: { type: string; status: string }[] } }>(
              Resources.pods,
              "nginx-remote",
              "liqo-demo",
            );
            return {
              stream: (await samples()).filter((s) => s.at >= from).slice(-10),
              romePod: { podIP: pod?.status?.podIP, conditions: pod?.status?.conditions },
            };
          },
        });
      let restore: (() => void) | undefined;
      try {
        const baselineFrom = Date.now();
        await waitFor(
          "20 answers before any fault",
          async () => {
            const s = (await samples()).filter((x) => x.at >= baselineFrom);
            return s.length >= 20 ? s : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 1000 },
        );
        const faultsFrom = Date.now();
        const baseline = summarize(await samples(), baselineFrom, faultsFrom);

        // Every liqo role, both clusters, in a random order, 2–5 s apart; then again once the stream
        // has recovered (KILL_ROUNDS rounds): each role is killed repeatedly, its restarted container too.
        /** One pod per role in each cluster (every route agent, the active gateway), chosen afresh each round. */
        const chooseTargets = async () => {
          const targets: { cluster: "rome" | "milan"; role: string; uid: string }[] = [];
          for (const cluster of ["rome", "milan"] as const) {
            const pods = (await q[cluster].list<PodObject>(Resources.pods, { namespace: "liqo" })).items.filter(
              (p) => p.status?.phase === "Running",
            );
            const byRole = new Map<string, PodObject[]>();
            for (const p of pods) {
              const role = p.metadata.labels?.["app.kubernetes.io/name"] ?? p.metadata.name!;
              byRole.set(role, [...(byRole.get(role) ?? []), p]);
            }
            for (const [role, list] of byRole) {
              const chosen =
                role === "liqo-route"
                  ? list
                  : role === "liqo-gateway"
                    ? list.filter((p) => p.metadata.labels?.["net.liqo.io/gateway-role"] === "active")
                    : list.slice(0, 1);
              for (const p of chosen) targets.push({ cluster, role, uid: p.metadata.uid! });
            }
          }
          return targets.sort(() => Math.random() - 0.5);
        };
        // milan's API server is not among the targets: the virtual node must stay Ready through the kills.
        const truth = watchTruth(q.rome, "liqo-milan", q.milan);
        const nodeNetns = q.rig.clusters.flatMap((c) => (c.realNodeStates ?? []).map((n) => n.netns));
        const rounds: {
          from: number;
          kills: { what: string; at: number }[];
          stats: ReturnType<typeof summarize>;
          answeringAfter: number;
        }[] = [];
        for (let round = 1; round <= KILL_ROUNDS; round++) {
          const roundFrom = Date.now();
          const kills: { what: string; at: number }[] = [];
          for (const t of await chooseTargets()) {
            // A container restarted after the previous round's kill may be in back-off: wait for its processes.
            const n = await waitFor(
              `round ${round}: ${t.cluster}/${t.role} running, to be killed`,
              async () => killPod(t.uid, nodeNetns) || undefined,
              { timeoutMs: 120_000, intervalMs: 1000 },
            ).catch(() => 0);
            kills.push({ what: `${t.cluster}/${t.role}`, at: Date.now() });
            expect({ round, pod: `${t.cluster}/${t.role}`, processes: n > 0 }).toEqual({
              round,
              pod: `${t.cluster}/${t.role}`,
              processes: true,
            });
            await Bun.sleep(2000 + Math.random() * 3000);
          }
          const killsDone = Date.now();
          const back = await recovery(killsDone, `the stream answering 30 times in a row after kill round ${round}`);
          rounds.push({
            from: roundFrom,
            kills,
            stats: summarize(await samples(), roundFrom, back),
            answeringAfter: (back - killsDone) / 1000,
          });
        }
        const killTruth = await truth.stop();
        // One active gateway per cluster: a killed holder's restarted container must not keep its
        // old "active" label once a standby has taken over (the Service would pick both).
        for (const cluster of ["rome", "milan"] as const) {
          const labelled = async () =>
            (
              await q[cluster].list<PodObject>(Resources.pods, {
                namespace: "liqo",
                labelSelector: "app.kubernetes.io/name=liqo-gateway,net.liqo.io/gateway-role=active",
              })
            ).items.map((p) => p.metadata.name);
          await waitFor(`one gateway pod labelled active in ${cluster}`, async () => (await labelled()).length === 1, {
            timeoutMs: 60_000,
            describe: labelled,
          });
        }

        // The link between the clusters dark for 60 s.
        const darkFrom = Date.now();
        restore = blackHole(q.rig, "rome", "milan");
        const notReady = await waitFor(
          "rome's virtual node NotReady while milan is unreachable",
          async () => {
            const node = await q.rome.find<
              KubeObject & { status?: { conditions?: { type: string; status: string }[] } }
            >(Resources.nodes, "liqo-milan");
            const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
            return ready && ready.status !== "True" ? Date.now() - darkFrom : undefined;
          },
          { timeoutMs: 55_000, intervalMs: 1000 },
        );
        await Bun.sleep(Math.max(0, 60_000 - (Date.now() - darkFrom))); // the fault lasts 60 s
        restore();
        restore = undefined;
        const lightAt = Date.now();
        const again = await recovery(lightAt, "the stream answering 30 times in a row after the link is back");
        await waitFor(
          "rome's virtual node Ready again",
          async () => {
            const node = await q.rome.find<
              KubeObject & { status?: { conditions?: { type: string; status: string }[] } }
            >(Resources.nodes, "liqo-milan");
            return node?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
          },
          { timeoutMs: 120_000 },
        );
        const dark = summarize(await samples(), darkFrom, again);
        console.log(
          [
            `faults under traffic (${label}), ${url} from rome's client pod every 0.2 s:`,
            `  baseline: ${baseline.requests} requests, ${baseline.failed} failed`,
            ...rounds.map((r, i) => {
              const t = (ms: number) => `+${((ms - r.from) / 1000).toFixed(0)}s`;
              // The kill the longest outage followed: the last one at or before its first failed request.
              const cause = r.kills
                .filter((k) => r.stats.longestOutageFrom && k.at <= r.stats.longestOutageFrom)
                .at(-1);
              return `  SIGKILL round ${i + 1} of ${KILL_ROUNDS}, ${r.kills.map((k) => `${k.what} ${t(k.at)}`).join(", ")}: ${r.stats.requests} requests, ${r.stats.failed} failed, longest outage ${r.stats.longestOutageSeconds.toFixed(1)} s${r.stats.longestOutageFrom ? ` from ${t(r.stats.longestOutageFrom)}${cause ? ` (after ${cause.what})` : ""}` : ""}, answering again ${r.answeringAfter.toFixed(0)} s after the last kill`;
            }),
            `  virtual node through the kills: ${truthCell(killTruth)}`,
            `  link black-holed 60 s: ${dark.requests} requests, ${dark.failed} failed, longest outage ${dark.longestOutageSeconds.toFixed(1)} s, answering again ${((again - lightAt) / 1000).toFixed(1)} s after the link came back; virtual node NotReady after ${(notReady / 1000).toFixed(0)} s`,
          ].join("\n"),
        );
        expect(baseline.failed).toBe(0);
        expect({ samples: killTruth.samples > 0, untrue: untrue(killTruth) }).toEqual({ samples: true, untrue: 0 });
        // The fault was real: the dark link cost requests.
        expect(dark.failed).toBeGreaterThan(0);
        expect(await remoteUids()).toEqual(uidsBefore);
      } finally {
        restore?.();
        await kubectl("rome", "exec", "-n", "liqo-demo", "curl", "--", "touch", "/tmp/stop");
      }
    }, 900_000);
  }

  /** Last: a milan node dies with an offloaded pod on it. */
  function nodeDeath() {
    test("a milan node dies with four offloaded pods on it: they turn not Ready in rome, then run again on the other node (none lost, none doubled, nothing left on the dead node) and answer; the virtual node stays Ready, as milan answers all along", async () => {
      const [victim, other] = q.rig.clusters[1]!.realNodeStates!;
      // Move milan's own control pods (liqo, CoreDNS) off the victim first, so what is tested is the
      // offloaded pod's fate, not milan's liqo losing its controller manager or gateway for 5 minutes.
      expect((await kubectl("milan", "cordon", victim!.name)).code).toBe(0);
      for (const ns of ["liqo", "kube-system"]) {
        const pods = (
          await q.milan.list<PodObject>(Resources.pods, {
            namespace: ns,
            fieldSelector: `spec.nodeName=${victim!.name}`,
          })
        ).items;
        for (const p of pods.filter((x) => !x.metadata.name!.startsWith("liqo-route-")))
          await q.milan.delete(Resources.pods, p.metadata.name!, ns);
      }
      await waitFor(
        "milan's liqo and CoreDNS Ready again on the other node",
        async () => {
          const pods = [
            ...(
              await q.milan.list<PodObject & { status?: { conditions?: { type: string; status: string }[] } }>(
                Resources.pods,
                { namespace: "liqo" },
              )
            ).items,
            ...(
              await q.milan.list<PodObject & { status?: { conditions?: { type: string; status: string }[] } }>(
                Resources.pods,
                { namespace: "kube-system" },
              )
            ).items,
          ].filter((p) => !p.metadata.name!.startsWith("liqo-route-"));
          return pods.every(
            (p) =>
              p.spec?.nodeName === other!.name &&
              p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          );
        },
        { timeoutMs: 180_000 },
      );
      expect((await kubectl("milan", "uncordon", victim!.name)).code).toBe(0);
      expect((await kubectl("milan", "cordon", other!.name)).code).toBe(0);
      // Tolerates an unreachable node for 5 s (the default is 300 s), so milan evicts it soon after.
      const quickEviction = ["node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"].map((key) => ({
        key,
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 5,
      }));
      // Four pods on the victim: "survivor" is curled at the end; all four are counted.
      const names = ["survivor", "survivor-b", "survivor-c", "survivor-d"];
      for (const name of names)
        await q.rome.create(Resources.pods, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace: "liqo-demo", labels: { "node-death": "yes" } },
          spec: {
            nodeSelector: { "liqo.io/type": "virtual-node" },
            tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }, ...quickEviction],
            containers: [{ name: "web", image: "ghcr.io/liqo-bun/hello:0.1.0" }],
          },
        } as KubeObject);
      type Ready = PodObject & { status?: { conditions?: { type: string; status: string }[] } };
      const ready = (p?: Ready) => !!p?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      const local = async () =>
        (await q.rome.list<Ready>(Resources.pods, { namespace: "liqo-demo", labelSelector: "node-death=yes" })).items;
      const remote = async () =>
        (await q.milan.list<PodObject>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })).items.filter(
          (p) => names.includes(p.metadata.name!),
        );
      const first = new Map(
        (
          await waitFor(
            "the four pods Ready in rome",
            async () => {
              const pods = await local();
              return pods.length === names.length && pods.every((p) => ready(p) && p.status?.podIP) ? pods : undefined;
            },
            { timeoutMs: 180_000 },
          )
        ).map((p) => [p.metadata.name!, p.status!.podIP!]),
      );
      expect((await remote()).map((p) => p.spec?.nodeName)).toEqual(names.map(() => victim!.name));
      expect((await kubectl("milan", "uncordon", other!.name)).code).toBe(0);

      // milan's API server answers all along: the virtual node must stay Ready (its truth is counted).
      const truth = watchTruth(q.rome, "liqo-milan", q.milan);
      const killedAt = Date.now();
      expect(stopRealNodeNow(victim!)).toEqual([]);
      await waitFor(
        "survivor not Ready in rome",
        async () => !ready((await local()).find((p) => p.metadata.name === "survivor")),
        {
          timeoutMs: 240_000,
        },
      );
      const notReadyAfter = (Date.now() - killedAt) / 1000;
      await waitFor(
        "the four pods Ready again in rome, each at a new address",
        async () => {
          const pods = await local();
          return (
            pods.length === names.length &&
            pods.every((p) => ready(p) && p.status?.podIP && p.status.podIP !== first.get(p.metadata.name!))
          );
        },
        {
          timeoutMs: 420_000,
          describe: async () =>
            (await local()).map((p) => `${p.metadata.name} ready=${ready(p)} ip=${p.status?.podIP}`),
        },
      );
      const backAfter = (Date.now() - killedAt) / 1000;
      const t = await truth.stop();
      // The damage: every local pod has exactly one remote pod, Running on the live node; nothing else is left.
      const remotes = await remote();
      const lost = names.filter(
        (n) =>
          remotes.filter(
            (p) => p.metadata.name === n && p.status?.phase === "Running" && p.spec?.nodeName === other!.name,
          ).length !== 1,
      );
      const duplicated = remotes.length - new Set(remotes.map((p) => p.metadata.name)).size;
      const leftBehind = remotes.filter((p) => p.spec?.nodeName !== other!.name).map((p) => p.metadata.name);
      console.log(
        `node death (${label}): ${names.length} offloaded pods on milan's ${victim!.name}; not Ready in rome after ${notReadyAfter.toFixed(0)} s, all Ready again at new addresses after ${backAfter.toFixed(0)} s; lost ${lost.length}, duplicated ${duplicated}, left behind ${leftBehind.length}; virtual node ${truthCell(t)}`,
      );
      expect({ lost, duplicated, leftBehind }).toEqual({ lost: [], duplicated: 0, leftBehind: [] });
      expect(untrue(t)).toBe(0);
      expect(t.samples).toBeGreaterThan(0);
      const again = (await local()).find((p) => p.metadata.name === "survivor")!;
      expect(
        await curlFromRome(q, `http://${again.status!.podIP}/after-node-death`, /Server name: survivor/, 180_000),
      ).toContain("URI: /after-node-death");
    }, 900_000);
  }

  /**
   * A VirtualNode as a user makes one (liqoctl, against the chart's controller manager under its
   * RBAC): a real container behind it, on the milan node its nodeSelector names, answers rome.
   */
  function virtualNodeOnRealNodes() {
    test("liqoctl create virtualnode: a pod on it runs on the milan node its selector names and answers rome's curl; liqoctl delete virtualnode drains it", async () => {
      const run = async (...args: string[]): Promise<Exec> => {
        const proc = Bun.spawn([...liqoctl, ...args, `--kubeconfig=${q.kubeconfig("rome")}`], {
          stdout: "pipe",
          stderr: "pipe",
        });
        const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
        return { out, err, code: await proc.exited };
      };
      const target = q.rig.clusters[1]!.realNodeStates!.at(-1)!.name;
      const created = await run(
        "create",
        "virtualnode",
        "milan-extra",
        "--remote-cluster-name",
        "milan",
        "--cpu",
        "500m",
        "--memory",
        "256Mi",
        "--pods",
        "5",
        "--labels",
        "pool=extra",
        "--remote-node-selector",
        `kubernetes.io/hostname=${target}`,
        "--timeout=120s",
      );
      expect({ code: created.code, err: created.err }).toMatchObject({ code: 0 });
      expect(created.err).toContain("Virtual node milan-extra is Ready");
      const template = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      await q.rome.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "nginx-extra", namespace: "liqo-demo" },
        spec: {
          // nginx-remote's container, without the token mount the API server added to it.
          containers: (template.spec as { containers: Record<string, unknown>[] }).containers.map(
            ({ volumeMounts: _, ...c }) => c,
          ),
          nodeSelector: { pool: "extra" },
          tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
        },
      } as KubeObject);
      const pod = await waitFor(
        "nginx-extra Running on milan-extra",
        async () => {
          const p = await q.rome.find<PodObject>(Resources.pods, "nginx-extra", "liqo-demo");
          return p?.spec?.nodeName === "milan-extra" && p.status?.phase === "Running" && p.status.podIP ? p : undefined;
        },
        { timeoutMs: 180_000 },
      );
      const inMilan = (
        await q.milan.list<PodObject>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })
      ).items.find((p) => p.metadata.name === "nginx-extra")!;
      expect(inMilan.spec?.nodeName).toBe(target);
      expect((inMilan.spec as { nodeSelector?: unknown }).nodeSelector).toEqual({ "kubernetes.io/hostname": target });
      expect(
        await curlFromRome(q, `http://${pod.status!.podIP}/through-a-virtualnode`, /Server name: nginx-extra/),
      ).toContain("URI: /through-a-virtualnode");
      const deleted = await run("delete", "virtualnode", "milan-extra", "--timeout=120s");
      expect({ code: deleted.code, err: deleted.err }).toMatchObject({ code: 0 });
      await waitFor(
        "milan-extra, nginx-extra and its copy in milan gone",
        async () =>
          !(await q.rome.find(Resources.nodes, "milan-extra")) &&
          !(await q.rome.find(Resources.pods, "nginx-extra", "liqo-demo")) &&
          !(await q.milan.find(Resources.pods, "nginx-extra", inMilan.metadata.namespace)),
        { timeoutMs: 120_000 },
      );
    }, 400_000);
  }

  /**
   * networking.securityMode, switched with helm upgrade on both clusters: the paths each mode lets
   * through and refuses, traffic by real pods through both gateways (issue 28, part 2).
   */
  function securityModes() {
    const chart = join(import.meta.dir, "../../chart");
    const helmUpgrade = async (cluster: string, ...sets: string[]): Promise<Exec> => {
      const proc = Bun.spawn(
        [
          findHelm(),
          "upgrade",
          "liqo",
          chart,
          "--namespace",
          "liqo",
          `--kubeconfig=${q.kubeconfig(cluster)}`,
          "--reuse-values",
          ...sets.flatMap((v) => ["--set", v]),
          "--wait",
          "--timeout",
          "5m",
        ],
        { stdout: "pipe", stderr: "pipe" },
      );
      const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      return { out, err, code: await proc.exited };
    };
    const curlIn = (cluster: string, ns: string, pod: string, url: string) =>
      kubectl(cluster, "exec", "-n", ns, pod, "--", "curl", "-sS", "--max-time", "3", url);
    /** A path that must answer: retried until its server names itself (the gateways may be rolling). */
    const answers = (what: string, cluster: string, ns: string, pod: string, url: string, server: string) =>
      until(what, () => curlIn(cluster, ns, pod, url), new RegExp(`Server name: ${server}`), 180_000);
    /** A path that must be refused: waited for (the mode takes effect as the gateways roll), then refused three times more. */
    async function refused(what: string, cluster: string, ns: string, pod: string, url: string): Promise<string> {
      let last: Exec | undefined;
      await waitFor(
        `${what} refused`,
        async () => ((last = await curlIn(cluster, ns, pod, url)).code !== 0 ? last : undefined),
        { timeoutMs: 180_000, intervalMs: 1000, describe: () => last },
      );
      const tries: Exec[] = [];
      for (let i = 0; i < 3; i++) tries.push(await curlIn(cluster, ns, pod, url));
      expect({ what, answered: tries.filter((t) => t.code === 0).map((t) => t.out.slice(0, 80)) }).toEqual({
        what,
        answered: [],
      });
      return tries.map((t) => t.err.trim()).join("\n");
    }

    /** helm upgrade of both clusters to `mode`, side by side. */
    async function modeOnBoth(mode: string): Promise<void> {
      const [r, m] = await Promise.all(["rome", "milan"].map((c) => helmUpgrade(c, `networking.securityMode=${mode}`)));
      expect({ rome: r!.code, milan: m!.code, err: r!.err + m!.err }).toMatchObject({ rome: 0, milan: 0 });
    }
    /** FullPodToPod's paths between each cluster's own pods: milan's outsider ↔ rome's client pod. */
    async function ownPodsBothWays(): Promise<void> {
      await answers(
        "milan's own pod → rome's client pod",
        "milan",
        "default",
        "outsider",
        `http://${paths.romePrivate}/`,
        "curl",
      );
      await answers(
        "rome's client pod → milan's own pod",
        "rome",
        "liqo-demo",
        "curl",
        `http://${paths.milanOwn}/`,
        "outsider",
      );
    }
    const statusOfRome = async () =>
      (await Bun.$`${liqoctl} status --kubeconfig=${q.kubeconfig("rome")}`.quiet().nothrow()).stdout.toString();

    let paths: {
      /** rome's client pod (in liqo-demo, behind no Service) as milan reaches it. */
      romePrivate: string;
      /** nginx-local (an endpoint of the reflected Service) as milan reaches it. */
      romeEndpoint: string;
      /** milan's own pod (default namespace, nothing to do with liqo) as rome reaches it. */
      milanOwn: string;
      remotePod: string;
      twin: string;
    };

    test("security modes: FullPodToPod (the default): every pod reaches every pod, a pod of milan's own included", async () => {
      await q.milan.apply(
        Resources.pods,
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "outsider", namespace: "default" },
          spec: {
            terminationGracePeriodSeconds: 0,
            containers: [{ name: "web", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }],
          },
        } as KubeObject,
        { fieldManager: "test" },
      );
      const running = (p?: PodObject) => (p?.status?.phase === "Running" && p.status.podIP ? p : undefined);
      const outsider = await waitFor(
        "milan's outsider pod Running",
        async () => running(await q.milan.find<PodObject>(Resources.pods, "outsider", "default")),
        { timeoutMs: 120_000 },
      );
      const tep = (await q.rome.list<TunnelEndpoint & KubeObject>(TunnelEndpointResource)).items[0]!.spec;
      const client = await q.rome.get<PodObject>(Resources.pods, "curl", "liqo-demo");
      const local = await q.rome.get<PodObject>(Resources.pods, "nginx-local", "liqo-demo");
      paths = {
        romePrivate: addressSeenByPeer(client.status!.podIP!, tep.localPodCIDR, tep.localNATPodCIDR),
        romeEndpoint: addressSeenByPeer(local.status!.podIP!, tep.localPodCIDR, tep.localNATPodCIDR),
        milanOwn: addressSeenByPeer(outsider.status!.podIP!, tep.remotePodCIDR, tep.remoteNATPodCIDR),
        remotePod: (await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo")).status!.podIP!,
        twin: await twinNamespace(),
      };
      expect(await statusOfRome()).toContain("Network security mode: FullPodToPod (every pod reaches every pod");
      await ownPodsBothWays();
    }, 300_000);

    test("security modes: a typo in networking.securityMode fails helm upgrade naming the field; the release keeps its mode", async () => {
      const r = await helmUpgrade("rome", "networking.securityMode=Segregated");
      expect(r.code).not.toBe(0);
      expect(r.err).toContain(
        "/networking/securityMode': value must be one of 'FullPodToPod', 'IntraClusterTrafficSegregation'",
      );
      const args = (
        await kubectl(
          "rome",
          "-n",
          "liqo",
          "get",
          "deploy",
          "liqo-gateway",
          "-o",
          "jsonpath={.spec.template.spec.containers[0].args}",
        )
      ).out;
      expect(args).not.toContain("Segregated");
    }, 120_000);

    test("security modes: IntraClusterTrafficSegregation on both (helm upgrade): offloaded pods and reflected Services work; pods of each cluster's own are refused both ways; liqoctl status and test network say so", async () => {
      await modeOnBoth("IntraClusterTrafficSegregation");
      // Refused: a pod of milan's own → rome's pod behind no Service (rome's gateway), and rome's pod → milan's own pod (milan's).
      const why = await refused(
        "milan's own pod → rome's client pod",
        "milan",
        "default",
        "outsider",
        `http://${paths.romePrivate}/`,
      );
      expect(why).toMatch(/No route to host|Failed to connect|timed out/);
      await refused("rome's client pod → milan's own pod", "rome", "liqo-demo", "curl", `http://${paths.milanOwn}/`);
      // Allowed: rome → its offloaded pod; the offloaded pod → any rome pod; milan's own pod → the
      // reflected Service and its endpoint in rome.
      await answers(
        "rome's client → nginx-remote",
        "rome",
        "liqo-demo",
        "curl",
        `http://${paths.remotePod}/`,
        "nginx-remote",
      );
      await answers(
        "nginx-remote → rome's client pod",
        "rome",
        "liqo-demo",
        "nginx-remote",
        `http://${paths.romePrivate}/`,
        "curl",
      );
      await answers(
        "milan's own pod → the reflected Service, answered by nginx-local in rome",
        "milan",
        "default",
        "outsider",
        `http://liqo-demo.${paths.twin}.svc.cluster.local/`,
        "nginx-local",
      );
      await answers(
        "milan's own pod → nginx-local (a reflected Service's endpoint)",
        "milan",
        "default",
        "outsider",
        `http://${paths.romeEndpoint}/`,
        "nginx-local",
      );
      expect(await statusOfRome()).toContain("Network security mode: IntraClusterTrafficSegregation (peers reach only");
      const t = await testNetwork("milan", `--remote-kubeconfig=${q.kubeconfig("milan")}`);
      expect(t.err).toContain(
        "security modes: IntraClusterTrafficSegregation here, IntraClusterTrafficSegregation in milan",
      );
      expect(t.out).toMatch(
        /^local pod → a pod of the peer's own \(must be refused\)\s+passed\s+not answered in 3 tries/m,
      );
      expect(t.out).toMatch(
        /^a pod of the peer's own → local pod behind no Service \(must be refused\)\s+passed\s+not answered/m,
      );
      expect(t.out).toMatch(
        /^a pod of the peer's own → reflected Service \(local endpoint\)\s+passed\s+answered by server-local/m,
      );
      expect(t.out).toContain("Network test of milan: all 17 checks passed");
      expect(t.code).toBe(0);
      await noTestNamespaces();
      expect((await q.milan.list(Resources.namespaces)).items.filter((n) => n.metadata.name!.endsWith("-own"))).toEqual(
        [],
      );
    }, 900_000);

    test("security modes: back to FullPodToPod with helm upgrade: milan's own pod reaches rome's client pod again", async () => {
      await modeOnBoth("FullPodToPod");
      await ownPodsBothWays();
      await q.milan.delete(Resources.pods, "outsider", "default");
    }, 600_000);
  }

  describe(`the fabric in-cluster, ${label}`, () => {
    test("NETWORKING Established and a Connected WireGuard tunnel on both sides", async () => {
      const fcs = await kubectl("rome", "get", "foreignclusters", "--no-headers");
      expect(fcs.out).toMatch(/^milan\s+Established\s+None\s+Established\s+Established/m);
      for (const client of [q.rome, q.milan]) {
        const tep = await waitFor(
          "a Connected TunnelEndpoint",
          async () => {
            const t = (await client.list<TunnelEndpoint & KubeObject>(TunnelEndpointResource)).items[0];
            return (t as { status?: { connection?: { status?: string } } } | undefined)?.status?.connection?.status ===
              "Connected"
              ? t
              : undefined;
          },
          { timeoutMs: 120_000 },
        );
        if (overlapping) expect(tep.spec.remoteNATPodCIDR).not.toBe("None");
        else expect(tep.spec.remoteNATPodCIDR).toBe("None");
      }
      // /metrics of the active gateway and of the controller managers (their admin API on the
      // pod's loopback, read with the image's bun): the tunnel's WireGuard figures, rome's virtual
      // node and offloaded pod, milan's ShadowPod, each labelled with the peer's cluster ID.
      // Every pod the selector matches: with HA only the leader runs the controllers.
      const scrape = async (cluster: "rome" | "milan", selector: string, port: number) => {
        const pods = (await q[cluster].list(Resources.pods, { namespace: "liqo", labelSelector: selector })).items;
        const fetchMetrics = `process.stdout.write(await (await fetch("http://127.0.0.1:${port}/metrics")).text())`;
        const out: MetricFamily[] = [];
        for (const pod of pods) {
          const r = await kubectl(cluster, "exec", "-n", "liqo", pod.metadata.name!, "--", "bun", "-e", fetchMetrics);
          if (r.code === 0) out.push(...parsePrometheusText(r.out));
        }
        return out;
      };
      const sample = (families: MetricFamily[], name: string, labels: Record<string, string>) =>
        families
          .filter((f) => f.name === name)
          .flatMap((f) => f.samples)
          .find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
      const peerOf = async (cluster: "rome" | "milan") =>
        (await q[cluster].list<TunnelEndpoint & KubeObject>(TunnelEndpointResource)).items[0]!.spec.clusterID;
      for (const cluster of ["rome", "milan"] as const) {
        const peer = { remote_cluster_id: await peerOf(cluster) };
        const series = await waitFor(
          `${cluster}'s active gateway: WireGuard series for peer ${peer.remote_cluster_id}, bytes both ways`,
          async () => {
            const f = await scrape(
              cluster,
              "app.kubernetes.io/name=liqo-gateway,net.liqo.io/gateway-role=active",
              8093,
            );
            const got = {
              age: sample(f, "liqo_gateway_peer_last_handshake_age_seconds", peer),
              rx: sample(f, "liqo_gateway_peer_received_bytes_total", peer),
              tx: sample(f, "liqo_gateway_peer_transmitted_bytes_total", peer),
            };
            return got.age !== undefined && got.rx! > 0 && got.tx! > 0 ? got : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 2000 },
        );
        // Connected means a handshake within the timeout (60 s); WireGuard renews it every 2 minutes.
        expect(series.age).toBeGreaterThanOrEqual(0);
        expect(series.age).toBeLessThan(180);
        console.log(`${cluster}'s gateway, peer ${peer.remote_cluster_id}: ${JSON.stringify(series)}`);
      }
      const manager = "app.kubernetes.io/name=liqo-controller-manager";
      const milan = { remote_cluster_id: await peerOf("rome") };
      const rome = { remote_cluster_id: await peerOf("milan") };
      const consumer = await waitFor(
        "rome's controller manager: milan's virtual node Ready, nginx-remote Running on it",
        async () => {
          const f = await scrape("rome", manager, 8081);
          const got = {
            nodes: sample(f, "liqo_virtual_node_info", milan),
            ready: sample(f, "liqo_virtual_node_condition", { ...milan, condition: "Ready", status: "true" }),
            running: sample(f, "liqo_offloaded_pods", { ...milan, phase: "Running" }),
          };
          return got.nodes === 1 && got.ready === 1 && got.running! >= 1 ? got : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2000 },
      );
      const provider = await waitFor(
        "milan's controller manager: rome's ShadowPod with a Running pod",
        async () => {
          const running = sample(await scrape("milan", manager, 8081), "liqo_shadowpods", {
            ...rome,
            phase: "Running",
          });
          return running! >= 1 ? { running } : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2000 },
      );
      console.log(
        `rome (consumer): ${JSON.stringify(consumer)}; milan (provider) ShadowPods: ${JSON.stringify(provider)}`,
      );
    });

    test("rome's pod → nginx-remote's pod address and → the Service by DNS name, answered in milan", async () => {
      const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      const inMilan = (
        await q.milan.list<PodObject>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })
      ).items.find((p) => p.metadata.name === "nginx-remote")!;
      // With the same pod CIDR on both sides, rome sees milan's pod at a remapped address.
      if (overlapping) expect(remote.status!.podIP).not.toBe(inMilan.status!.podIP);
      else expect(remote.status!.podIP).toBe(inMilan.status!.podIP);
      const answers = await crossClusterAnswers(q);
      expect(answers.byPod).toContain(`Server address: ${inMilan.status!.podIP}:80`);
      expect(answers.byService).toContain("Server name: nginx-remote");
    }, 300_000);

    test("milan → rome: the offloaded container reaches nginx-local through the reflected Service, by name (exec through the virtual kubelet)", async () => {
      const ns = await twinNamespace();
      const r = await until(
        "nginx-local answering nginx-remote's curl of the reflected Service",
        () =>
          kubectl(
            "rome",
            "exec",
            "-n",
            "liqo-demo",
            "nginx-remote",
            "--",
            "curl",
            "-sS",
            "--max-time",
            "5",
            `http://liqo-demo.${ns}.svc.cluster.local/`,
          ),
        /Server name: nginx-local/,
      );
      expect(r.out).toContain("Server name: nginx-local");
    }, 300_000);

    test("a rome node → the remote pod (node namespace, no pod in between)", async () => {
      const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      const node = q.rig.clusters[0]!.realNodeStates![0]!;
      const r = await until(
        `curl from node ${node.name}`,
        async () => {
          const p = Bun.spawn(
            [
              "nsenter",
              `--net=/var/run/netns/${node.netns}`,
              "--",
              "curl",
              "-sS",
              "--max-time",
              "5",
              `http://${remote.status!.podIP}/from-a-node`,
            ],
            { stdout: "pipe", stderr: "pipe" },
          );
          const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
          return { out, err, code: await p.exited };
        },
        /Server name: nginx-remote/,
      );
      expect(r.out).toContain("URI: /from-a-node");
    }, 300_000);

    test("a client on the host (outside every node) reaches a NodePort and a LoadBalancer Service of rome whose only endpoint runs in milan; with externalTrafficPolicy Local neither answers, as no endpoint is local", async () => {
      // Only nginx-remote carries this label: the Service's one endpoint is the offloaded pod.
      const labelled = await kubectl("rome", "label", "pod", "-n", "liqo-demo", "nginx-remote", "where=milan");
      expect(labelled.code).toBe(0);
      await q.rome.create(Resources.services, {
        metadata: { name: "remote-only", namespace: "liqo-demo" },
        spec: { type: "NodePort", selector: { where: "milan" }, ports: [{ port: 80, targetPort: 80 }] },
      });
      // The rig's load balancer (a host route to a rome node, as MetalLB's layer 3 mode would) for the
      // LoadBalancer Service of the same endpoint.
      const lb = startRigLoadBalancer(q.rig, "rome", q.rome);
      await q.rome.create(Resources.services, {
        metadata: { name: "remote-lb", namespace: "liqo-demo" },
        spec: {
          type: "LoadBalancer",
          loadBalancerClass: RIG_LB_CLASS,
          selector: { where: "milan" },
          ports: [{ port: 80, targetPort: 80 }],
        },
      });
      try {
        const svc = await q.rome.get<KubeObject & { spec: { ports: { nodePort: number }[] } }>(
          Resources.services,
          "remote-only",
          "liqo-demo",
        );
        const nodePort = svc.spec.ports[0]!.nodePort;
        const curlHost = (ip: string): Promise<Exec> =>
          (async () => {
            const p = Bun.spawn(["curl", "-sS", "--max-time", "3", `http://${ip}:${nodePort}/from-the-host`], {
              stdout: "pipe",
              stderr: "pipe",
            });
            const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
            return { out, err, code: await p.exited };
          })();
        // Every rome node answers (kube-proxy sends it on to milan through the gateways).
        for (const node of q.rig.clusters[0]!.realNodeStates!) {
          const r = await until(
            `curl from the host to ${node.name} (${node.ip}):${nodePort}`,
            () => curlHost(node.ip),
            /Server name: nginx-remote/,
          );
          expect(r.out).toContain("URI: /from-the-host");
        }
        // The load balancer's address, port 80, answered the same way.
        const lbAddress = await waitFor(
          "the rig's load balancer address on Service liqo-demo/remote-lb",
          async () =>
            (
              await q.rome.get<KubeObject & { status?: { loadBalancer?: { ingress?: { ip?: string }[] } } }>(
                Resources.services,
                "remote-lb",
                "liqo-demo",
              )
            ).status?.loadBalancer?.ingress?.[0]?.ip,
          { timeoutMs: 30_000, intervalMs: 500 },
        );
        expect(lbAddress).toBe(lb.addressOf("liqo-demo/remote-lb")!);
        const curlLb = async (): Promise<Exec> => {
          const p = Bun.spawn(["curl", "-sS", "--max-time", "3", `http://${lbAddress}/from-a-load-balancer`], {
            stdout: "pipe",
            stderr: "pipe",
          });
          const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
          return { out, err, code: await p.exited };
        };
        const viaLb = await until(
          `curl from the host to ${lbAddress}:80 (LoadBalancer)`,
          curlLb,
          /Server name: nginx-remote/,
        );
        expect(viaLb.out).toContain("URI: /from-a-load-balancer");
        // externalTrafficPolicy Local: only nodes with a local endpoint answer, and the endpoint is on
        // the virtual node, where no kube-proxy runs: the NodePort is closed on every real node, and
        // the load balancer's address leads nowhere.
        for (const name of ["remote-only", "remote-lb"])
          await q.rome.mergePatch(Resources.services, name, "liqo-demo", { spec: { externalTrafficPolicy: "Local" } });
        const node = q.rig.clusters[0]!.realNodeStates![0]!;
        let last: Exec | undefined;
        await waitFor(
          `the NodePort of ${node.name} closed with externalTrafficPolicy Local`,
          async () => {
            last = await curlHost(node.ip);
            return last.code !== 0 ? true : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 1000, describe: () => last },
        );
        await waitFor(
          `${lbAddress}:80 (LoadBalancer) not answered with externalTrafficPolicy Local`,
          async () => {
            last = await curlLb();
            return last.code !== 0 ? true : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 1000, describe: () => last },
        );
      } finally {
        await lb.stop();
        await q.rome.delete(Resources.services, "remote-lb", "liqo-demo");
        await q.rome.delete(Resources.services, "remote-only", "liqo-demo");
        await kubectl("rome", "label", "pod", "-n", "liqo-demo", "nginx-remote", "where-");
      }
    }, 300_000);

    test("10 MB both ways through the tunnel with the default MTUs, byte for byte", async () => {
      const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      // milan → rome: the offloaded container serves 10 MB of random bytes; rome's client reads them.
      const made = await kubectl(
        "rome",
        "exec",
        "-n",
        "liqo-demo",
        "nginx-remote",
        "--",
        "sh",
        "-c",
        "head -c 10485760 /dev/urandom > /tmp/big && sha256sum /tmp/big | cut -d' ' -f1 && (nc -l -N -p 9000 < /tmp/big > /dev/null 2>&1 &)",
      );
      expect(made.code).toBe(0);
      const want = made.out.trim();
      expect(want).toMatch(/^[0-9a-f]{64}$/);
      const got = await until(
        "10 MB from nginx-remote",
        () =>
          // -d: the client never reads stdin, so it never half-closes; the server closes after the file.
          inClient(`nc -d -w 20 ${remote.status!.podIP} 9000 | sha256sum | cut -d' ' -f1`),
        /^[0-9a-f]{64}/,
        60_000,
      );
      expect(got.out.trim()).toBe(want);
      // rome → milan: rome's client uploads 10 MB; the offloaded container hashes what arrived.
      const local = await inClient("head -c 10485760 /dev/urandom > /tmp/up && sha256sum /tmp/up | cut -d' ' -f1");
      const listen = await kubectl(
        "rome",
        "exec",
        "-n",
        "liqo-demo",
        "nginx-remote",
        "--",
        "sh",
        "-c",
        "rm -f /tmp/got; (nc -l -p 9001 > /tmp/got 2>/dev/null &) ; echo listening",
      );
      expect(listen.out).toContain("listening");
      const sent = await until(
        "10 MB to nginx-remote",
        () => inClient(`nc -N -w 20 ${remote.status!.podIP} 9001 < /tmp/up && echo sent`),
        /sent/,
        60_000,
      );
      expect(sent.code).toBe(0);
      const arrived = await until(
        "the upload hashed in milan",
        () =>
          kubectl(
            "rome",
            "exec",
            "-n",
            "liqo-demo",
            "nginx-remote",
            "--",
            "sh",
            "-c",
            "[ $(stat -c %s /tmp/got) = 10485760 ] && sha256sum /tmp/got | cut -d' ' -f1",
          ),
        /^[0-9a-f]{64}/,
        60_000,
      );
      expect(arrived.out.trim()).toBe(local.out.trim());
    }, 300_000);

    test("`image: nginx` (pull policy Always) from the rig's registry: a Deployment on a rome node and, offloaded, in milan; another in milan directly", async () => {
      const physical = q.rig.clusters[0]!.realNodeStates![0]!.name;
      const deployment = (namespace: string, replicas: number, spec: Record<string, unknown>) =>
        appDeployment({
          name: "pulled-nginx",
          namespace,
          replicas,
          podSpec: { ...spec, containers: [{ name: "nginx", image: "nginx" }] },
        });
      // One replica per node, on rome's first node and on the virtual node.
      await q.rome.create(
        Resources.deployments,
        deployment("liqo-demo", 2, {
          tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      { key: "kubernetes.io/hostname", operator: "In", values: [physical, "liqo-milan"] },
                    ],
                  },
                ],
              },
            },
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: "pulled-nginx" } }, topologyKey: "kubernetes.io/hostname" },
              ],
            },
          },
        }),
      );
      const pods = async (client: typeof q.rome, namespace: string) =>
        (await client.list<PodObject>(Resources.pods, { namespace, labelSelector: "app=pulled-nginx" })).items;
      const running = async () => {
        const [rome, milan] = await Promise.all([pods(q.rome, "liqo-demo"), pods(q.milan, "default")]);
        return {
          rome,
          milan,
          ok:
            rome.length === 2 && milan.length === 1 && [...rome, ...milan].every((p) => p.status?.phase === "Running"),
        };
      };
      await q.milan.create(Resources.deployments, deployment("default", 1, {}));
      try {
        const seen = await waitFor(
          "the three nginx pods Running",
          async () => {
            const r = await running();
            return r.ok ? r : undefined;
          },
          {
            timeoutMs: 240_000,
            describe: async () => {
              const r = await running();
              return [...r.rome, ...r.milan].map((p) => `${p.metadata.name}@${p.spec?.nodeName}=${p.status?.phase}`);
            },
          },
        );
        expect(seen.rome.map((p) => p.spec?.nodeName).sort()).toEqual(["liqo-milan", physical].sort());
        // The offloaded replica runs in milan too, on one of its physical nodes.
        const twins = (
          await q.milan.list<PodObject>(Resources.pods, {
            labelSelector: "liqo.io/managed-by=shadowpod,app=pulled-nginx",
          })
        ).items;
        expect(twins.map((p) => p.status?.phase)).toEqual(["Running"]);
      } finally {
        await q.rome.delete(Resources.deployments, "pulled-nginx", "liqo-demo");
        await q.milan.delete(Resources.deployments, "pulled-nginx", "default");
        await waitFor(
          "the nginx pods gone from both clusters",
          async () =>
            (await pods(q.rome, "liqo-demo")).length === 0 &&
            (await pods(q.milan, "default")).length === 0 &&
            (await q.milan.list(Resources.pods, { labelSelector: "app=pulled-nginx" })).items.length === 0,
          { timeoutMs: 120_000 },
        );
      }
    }, 400_000);

    networkSelfTest();
    if (overlapping) networkSelfTestFabricDown();
    else networkSelfTestInterrupted();
    if (overlapping) faultsUnderTraffic();

    if (!overlapping) virtualKubeletOnRealContainers();

    test(ha
      ? "the active gateway pod deleted: the standby takes over and traffic resumes"
      : "the gateway pod deleted: a new one takes over and traffic resumes", async () => {
      type Gw = PodObject & { status?: { conditions?: { type: string; status: string }[] } };
      const gateways = async () =>
        (
          await q.rome.list<Gw>(Resources.pods, {
            namespace: "liqo",
            labelSelector: "app.kubernetes.io/name=liqo-gateway",
          })
        ).items;
      const activeOf = (pods: Gw[]) =>
        pods.find(
          (p) =>
            p.metadata.labels?.["net.liqo.io/gateway-role"] === "active" &&
            p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        );
      const before = await waitFor("an active gateway pod", async () => activeOf(await gateways()), {
        timeoutMs: 60_000,
      });
      // A failure names every gateway pod and the Lease, so a CI log explains itself.
      const state = async () => {
        const lease = await q.rome
          .get<KubeObject & { spec?: { holderIdentity?: string } }>(Resources.leases, "liqo-gateway", "liqo")
          .catch(() => undefined);
        const pods = (await gateways()).map((p) => ({
          name: p.metadata.name,
          created: p.metadata.creationTimestamp,
          deleting: !!p.metadata.deletionTimestamp,
          phase: p.status?.phase,
          role: p.metadata.labels?.["net.liqo.io/gateway-role"],
          ready: p.status?.conditions?.find((c) => c.type === "Ready")?.status,
        }));
        return JSON.stringify({ holder: lease?.spec?.holderIdentity, pods });
      };
      const names = (await gateways()).filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
      expect({ count: names.length, state: await state() }).toMatchObject({ count: ha ? 2 : 1 });
      await q.rome.delete(Resources.pods, before.metadata.name!, "liqo");
      const after = await waitFor(
        "another active gateway pod",
        async () => {
          const a = activeOf(await gateways());
          return a && a.metadata.name !== before.metadata.name ? a : undefined;
        },
        { timeoutMs: 180_000 },
      );
      // With a standby, the replica that was already running takes over (no new pod to wait for).
      if (ha)
        expect({ standbyTookOver: names.includes(after.metadata.name), state: await state() }).toMatchObject({
          standbyTookOver: true,
        });
      const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      expect(
        await curlFromRome(q, `http://${remote.status!.podIP}/after-failover`, /Server name: nginx-remote/, 180_000),
      ).toContain("URI: /after-failover");
    }, 400_000);

    test("the route pods restarted: traffic resumes", async () => {
      const before = (
        await q.rome.list<PodObject>(Resources.pods, {
          namespace: "liqo",
          labelSelector: "app.kubernetes.io/name=liqo-route",
        })
      ).items.map((p) => p.metadata.name);
      expect(before.length).toBe(2);
      for (const name of before) await q.rome.delete(Resources.pods, name!, "liqo");
      const remote = await q.rome.get<PodObject>(Resources.pods, "nginx-remote", "liqo-demo");
      await waitFor(
        "two new route pods",
        async () => {
          const pods = (
            await q.rome.list<PodObject>(Resources.pods, {
              namespace: "liqo",
              labelSelector: "app.kubernetes.io/name=liqo-route",
            })
          ).items;
          return pods.filter((p) => !before.includes(p.metadata.name) && p.status?.phase === "Running").length === 2;
        },
        { timeoutMs: 120_000 },
      );
      expect(
        await curlFromRome(
          q,
          `http://${remote.status!.podIP}/after-route-restart`,
          /Server name: nginx-remote/,
          180_000,
        ),
      ).toContain("URI: /after-route-restart");
    }, 400_000);

    securityModes();
    if (!overlapping) virtualNodeOnRealNodes();
    if (!overlapping) nodeDeath();
  });
}
