// Service continuity on real nodes (issue 31 part 3): the quick start's Service liqo-demo has one
// endpoint in rome (nginx-local) and one offloaded to milan (nginx-remote); milan has the reflected
// Service, with its own endpoint (the offloaded pod) and the one rome reflected (nginx-local). With
// the link between the clusters black-holed, rome's slice must show nginx-remote not ready and
// milan's reflected slice nginx-local not ready within the threshold, so that streams of requests in
// both clusters go only to what they can reach; once the link is back, everything is ready again as
// before, nothing deleted or doubled, and the reflected slice is again what rome's reflection wrote.
// In the same dark window, the MCS importer: a Service exported from both clusters (fabric-mcs.ts's
// echo pods), whose endpoints rome imported from milan must go not ready too, so that requests from
// rome to its clusterset name are answered by rome alone, and be ready again once the link is back.
import { afterAll, describe, expect, test } from "bun:test";
import { ForeignClusterResource } from "../../core/apis/discovery/foreigncluster.ts";
import { ServiceExportResource } from "../../core/apis/multicluster/serviceexport.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { UNREACHABLE_SINCE_ANNOTATION } from "../../core/continuity/endpoints.ts";
import { DEFAULT_CONTINUITY_THRESHOLD_MS } from "../../core/continuity/threshold.ts";
import { blackHole, parseStream, summarize, type StreamSample } from "../chaos/traffic.ts";
import type { InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { holdsFor, waitFor } from "../support/wait.ts";
import { echoExport, echoPod, echoService } from "./fabric-mcs.ts";

type Endpoint = { addresses?: string[]; targetRef?: { name?: string }; conditions?: { ready?: boolean } };
type Slice = KubeObject & { endpoints?: Endpoint[] | null };
type PodObject = KubeObject & { status?: { phase?: string } };

/** Slack past the threshold for the signal to be noticed (5 s probes and gateway passes) and written. */
const SLACK_MS = 25_000;
/** After both sides are marked: kube-proxy's turn, then the window in which nothing may fail. */
const SETTLE_MS = 3000;
const WINDOW_MS = 15_000;
/** Failed requests allowed in that window, per stream (a request in flight when kube-proxy switched). */
const ALLOWED_FAILURES = 1;
/** Where echo is exported from both clusters (a namespace of its own in each, as fabric-mcs.ts does). */
const MCS_NS = "mcs-continuity";
const MCS_NAME = `echo.${MCS_NS}.svc.clusterset.local`;
/** Each request of the streams gives up after this long (curl --max-time, in seconds). */
const REQUEST_TIMEOUT_S = 2;

export function serviceContinuity(quickstart: () => InClusterQuickstart, label: string): void {
  describe(`service continuity (${label})`, () => {
    afterAll(async () => {
      const q = quickstart();
      for (const k of [q.rome, q.milan]) await k.delete(Resources.namespaces, MCS_NS).catch(() => {});
    });
    test("the link black-holed: rome's endpoint in milan and milan's in rome go not ready within the threshold, streams in both clusters then reach only what they can; the link back: all ready again, the reflected slice as rome wrote it, nothing deleted or doubled", async () => {
      const q = quickstart();
      const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);
      const twin = (
        await q.milan.list<PodObject>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })
      ).items.find((p) => p.metadata.name === "nginx-remote")!.metadata.namespace!;
      const selector = { labelSelector: "kubernetes.io/service-name=liqo-demo" };
      const romeSlices = async () =>
        (await q.rome.list<Slice>(Resources.endpointSlices, { namespace: "liqo-demo", ...selector })).items;
      const milanSlices = async () =>
        (await q.milan.list<Slice>(Resources.endpointSlices, { namespace: twin, ...selector })).items;
      // The copies rome's reflection wrote: milan's own slice of the reflected Service carries the
      // Service's labels too (liqo.io/managed-by=reflection among them), but it has an owner.
      const reflected = (slices: Slice[]) =>
        slices.filter(
          (s) =>
            s.metadata.labels?.["endpointslice.kubernetes.io/managed-by"] === "endpointslice.reflection.liqo.io" &&
            !s.metadata.ownerReferences?.length,
        );
      const endpoints = (slices: Slice[]) => slices.flatMap((s) => s.endpoints ?? []);
      /** nginx-remote's endpoint in rome, and the endpoints rome reflected into milan: ready or not. */
      const romeRemoteReady = async () =>
        endpoints(await romeSlices()).find((e) => e.targetRef?.name === "nginx-remote")?.conditions?.ready;
      const milanReflectedReady = async () => {
        const eps = endpoints(reflected(await milanSlices()));
        return eps.length ? eps.every((e) => e.conditions?.ready !== false) : undefined;
      };
      const uids = async () => ({
        romePods: (await q.rome.list(Resources.pods, { namespace: "liqo-demo" })).items
          .map((p) => p.metadata.uid)
          .sort(),
        romeSlices: (await romeSlices()).map((s) => s.metadata.uid).sort(),
        milanPods: (await q.milan.list(Resources.pods, { namespace: twin })).items
          .filter((p) => p.metadata.name !== "continuity-client")
          .map((p) => p.metadata.uid)
          .sort(),
        milanSlices: (await milanSlices()).map((s) => s.metadata.uid).sort(),
      });
      // echo exported from both clusters; what rome imported of it from milan.
      const milanId = (
        await q.rome.list<KubeObject & { spec: { clusterIdentity: { clusterID: string } } }>(ForeignClusterResource)
      ).items[0]!.spec.clusterIdentity.clusterID;
      const romeImported = async () =>
        (
          await q.rome.list<Slice>(Resources.endpointSlices, {
            namespace: MCS_NS,
            labelSelector: `multicluster.kubernetes.io/service-name=echo,multicluster.kubernetes.io/source-cluster=${milanId}`,
          })
        ).items;
      const importedReady = async () => {
        const eps = endpoints(await romeImported());
        return eps.length ? eps.every((e) => e.conditions?.ready !== false) : undefined;
      };
      const mcsReady = (async () => {
        for (const c of ["rome", "milan"] as const) {
          await q[c].create(Resources.namespaces, { metadata: { name: MCS_NS } });
          await q[c].create(Resources.pods, echoPod(c, MCS_NS));
          await q[c].create(Resources.services, echoService(MCS_NS));
          await q[c].create(ServiceExportResource, echoExport(MCS_NS));
        }
        for (const c of ["rome", "milan"] as const)
          await waitFor(
            `${c}: pod ${MCS_NS}/echo-${c} Running`,
            async () => (await q[c].find<PodObject>(Resources.pods, `echo-${c}`, MCS_NS))?.status?.phase === "Running",
            { timeoutMs: 120_000 },
          );
        await waitFor(
          "rome: echo's endpoint imported from milan, ready",
          async () => (await importedReady()) === true,
          {
            timeoutMs: 120_000,
            intervalMs: 500,
          },
        );
      })();
      mcsReady.catch(() => {}); // awaited below, before the black hole
      const state = async () =>
        JSON.stringify(
          { rome: endpoints(await romeSlices()), milan: await milanSlices(), imported: await romeImported() },
          null,
          1,
        ).slice(0, 5000);

      // Both ready before anything happens, and the reflected slice as rome's reflection wrote it.
      await waitFor(
        "every endpoint of liqo-demo ready in rome and in milan",
        async () => (await romeRemoteReady()) === true && (await milanReflectedReady()) === true,
        { timeoutMs: 120_000, describe: state },
      );
      const reflectedBefore = reflected(await milanSlices()).map((s) => ({
        name: s.metadata.name,
        endpoints: s.endpoints,
      }));
      const before = await uids();

      // A client in milan, next to the reflected Service (in the twin namespace: the peer's pods are
      // what milan's network isolation lets talk to rome).
      await q.milan.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "continuity-client", namespace: twin },
        spec: { containers: [{ name: "curl", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }] },
      } as KubeObject);
      await waitFor(
        "milan's client pod Running",
        async () =>
          (await q.milan.find<PodObject>(Resources.pods, "continuity-client", twin))?.status?.phase === "Running",
        { timeoutMs: 120_000 },
      );
      const streams = {
        rome: { pod: ["-n", "liqo-demo", "curl"], url: "http://liqo-demo.liqo-demo.svc.cluster.local/" },
        milan: { pod: ["-n", twin, "continuity-client"], url: `http://liqo-demo.${twin}.svc.cluster.local/` },
      } as const;
      const inPod = (cluster: "rome" | "milan", script: string) =>
        kubectl(cluster, "exec", ...streams[cluster].pod, "--", "sh", "-c", script);
      for (const cluster of ["rome", "milan"] as const) {
        const loop = `while [ ! -f /tmp/cstop ]; do echo "$(date +%s%3N) $(curl -s -o /dev/null -w '%{http_code}' --max-time ${REQUEST_TIMEOUT_S} ${streams[cluster].url})" >> /tmp/cstream; sleep 0.2; done`;
        const started = await inPod(
          cluster,
          `rm -f /tmp/cstream /tmp/cstop; (setsid sh -c '${loop.replace(/'/g, "'\\''")}' >/dev/null 2>&1 &); echo streaming`,
        );
        expect(started.out).toContain("streaming");
      }
      const samples = async (cluster: "rome" | "milan"): Promise<StreamSample[]> =>
        parseStream((await inPod(cluster, "cat /tmp/cstream")).out);
      // From rome's echo pod to the clusterset name: which pod answered each request (none: failed).
      const inEcho = (script: string) => kubectl("rome", "exec", "-n", MCS_NS, "echo-rome", "--", "sh", "-c", script);
      const mcsSamples = async () => parseStream((await inEcho("cat /tmp/mstream")).out);

      let restore: (() => void) | undefined;
      try {
        const baselineFrom = Date.now();
        await waitFor(
          "10 answers in both streams",
          async () =>
            (await samples("rome")).filter((s) => s.at >= baselineFrom).length >= 10 &&
            (await samples("milan")).filter((s) => s.at >= baselineFrom).length >= 10,
          { timeoutMs: 60_000, intervalMs: 1000 },
        );
        await mcsReady;
        const importedBefore = (await romeImported()).map((s) => ({ uid: s.metadata.uid, endpoints: s.endpoints }));
        const mcsLoop = `while [ ! -f /tmp/mstop ]; do t=$(date +%s%3N); s=$(curl -s --max-time ${REQUEST_TIMEOUT_S} http://${MCS_NAME}/ | grep -o 'Server name: [a-z-]*' | cut -d' ' -f3); echo "$t \${s:-none}" >> /tmp/mstream; sleep 0.2; done`;
        const mcsStarted = await inEcho(
          `rm -f /tmp/mstream /tmp/mstop; (setsid sh -c '${mcsLoop.replace(/'/g, "'\\''")}' >/dev/null 2>&1 &); echo streaming`,
        );
        expect(mcsStarted.out).toContain("streaming");
        // The baseline starts at milan's first answer: kube-proxy has programmed the import by then.
        let mcsFrom = 0;
        let mcsSeen: StreamSample[] = [];
        await waitFor(
          `20 answers from rome to ${MCS_NAME} since echo-milan first answered`,
          async () => {
            mcsSeen = await mcsSamples();
            const first = mcsSeen.find((s) => s.code === "echo-milan");
            if (!first) return false;
            mcsFrom = first.at;
            return mcsSeen.filter((s) => s.at >= mcsFrom).length >= 20;
          },
          { timeoutMs: 30_000, intervalMs: 1000, describe: () => mcsSeen },
        );
        const darkFrom = Date.now();
        // A sample is stamped when its request starts: one that started in the last request timeout
        // before the black hole may be cut by it, so the baselines end that much earlier.
        const baselineTo = darkFrom - REQUEST_TIMEOUT_S * 1000;
        restore = blackHole(q.rig, "rome", "milan");
        let romeAfter: number | undefined;
        let milanAfter: number | undefined;
        let mcsAfter: number | undefined;
        await waitFor(
          "nginx-remote not ready in rome's slice, rome's endpoints not ready in milan's reflected slice, milan's endpoint of echo not ready in rome's import",
          async () => {
            if (romeAfter === undefined && (await romeRemoteReady()) === false) romeAfter = Date.now() - darkFrom;
            if (milanAfter === undefined && (await milanReflectedReady()) === false) milanAfter = Date.now() - darkFrom;
            if (mcsAfter === undefined && (await importedReady()) === false) mcsAfter = Date.now() - darkFrom;
            return romeAfter !== undefined && milanAfter !== undefined && mcsAfter !== undefined;
          },
          { timeoutMs: DEFAULT_CONTINUITY_THRESHOLD_MS + SLACK_MS, intervalMs: 500, describe: state },
        );
        const windowFrom = darkFrom + Math.max(romeAfter!, milanAfter!, mcsAfter!) + SETTLE_MS;
        // Not ready all through the window the streams are counted in: nothing put them back while the
        // link was dark; then the imported slice is the same object, its endpoint kept (not deleted).
        await holdsFor(
          "every endpoint of the dark peer not ready",
          async () =>
            (await romeRemoteReady()) === false &&
            (await milanReflectedReady()) === false &&
            (await importedReady()) === false,
          Math.max(0, windowFrom + WINDOW_MS - Date.now()),
          { intervalMs: 1000, describe: state },
        );
        expect({
          rome: await romeRemoteReady(),
          milan: await milanReflectedReady(),
          mcs: await importedReady(),
          importedSlices: (await romeImported()).map((s) => s.metadata.uid),
        }).toEqual({
          rome: false,
          milan: false,
          mcs: false,
          importedSlices: importedBefore.map((s) => s.uid),
        });
        const markedDuring = reflected(await milanSlices()).every(
          (s) => s.metadata.annotations?.[UNREACHABLE_SINCE_ANNOTATION] !== undefined,
        );
        restore();
        restore = undefined;
        const lightAt = Date.now();
        let romeBack: number | undefined;
        let milanBack: number | undefined;
        let mcsBack: number | undefined;
        await waitFor(
          "every endpoint ready again, on both sides",
          async () => {
            if (romeBack === undefined && (await romeRemoteReady()) === true) romeBack = Date.now() - lightAt;
            if (milanBack === undefined && (await milanReflectedReady()) === true) milanBack = Date.now() - lightAt;
            if (mcsBack === undefined && (await importedReady()) === true) mcsBack = Date.now() - lightAt;
            return romeBack !== undefined && milanBack !== undefined && mcsBack !== undefined;
          },
          { timeoutMs: 120_000, intervalMs: 500, describe: state },
        );
        // The reflected slice is again exactly what rome's reflection wrote: same endpoints, no marks.
        const reflectedAfter = await waitFor(
          "milan's reflected slice as before, without the continuity annotations",
          async () => {
            const now = reflected(await milanSlices());
            const clean = now.every(
              (s) => !Object.keys(s.metadata.annotations ?? {}).some((k) => k.startsWith("liqo.io/unr")),
            );
            return clean ? now.map((s) => ({ name: s.metadata.name, endpoints: s.endpoints })) : undefined;
          },
          { timeoutMs: 60_000, describe: state },
        );
        const quietFrom = Date.now();
        // The after-restore window of the streams: every endpoint stays ready through it.
        await holdsFor(
          "every endpoint ready after the restore",
          async () =>
            (await romeRemoteReady()) === true &&
            (await milanReflectedReady()) === true &&
            (await importedReady()) === true,
          5000,
          { intervalMs: 1000, describe: state },
        );
        for (const cluster of ["rome", "milan"] as const) await inPod(cluster, "touch /tmp/cstop");
        await inEcho("touch /tmp/mstop");
        const seen = { rome: await samples("rome"), milan: await samples("milan") };
        const importedAfter = (await romeImported()).map((s) => ({ uid: s.metadata.uid, endpoints: s.endpoints }));
        // The clusterset stream, per phase: requests, failed (no answer), answered by milan.
        const mcsAll = await mcsSamples();
        const mcsPhase = (from: number, to: number) => {
          const w = mcsAll.filter((s) => s.at >= from && s.at < to);
          return {
            requests: w.length,
            failed: w.filter((s) => s.code === "none").length,
            milan: w.filter((s) => s.code === "echo-milan").length,
            other: w.filter((s) => !["none", "echo-milan", "echo-rome"].includes(s.code)).length,
          };
        };
        const mcs = {
          baseline: mcsPhase(mcsFrom, baselineTo),
          untilMarked: mcsPhase(darkFrom, windowFrom),
          marked: mcsPhase(windowFrom, lightAt),
          afterRestore: mcsPhase(quietFrom, quietFrom + 5000),
        };
        const mcsLine = (p: ReturnType<typeof mcsPhase>) =>
          `${p.requests} requests, ${p.failed} failed, ${p.milan} answered by milan`;
        const phases = (s: StreamSample[]) => ({
          baseline: summarize(s, baselineFrom, baselineTo),
          untilMarked: summarize(s, darkFrom, windowFrom),
          marked: summarize(s, windowFrom, lightAt),
          afterRestore: summarize(s, quietFrom, quietFrom + 5000),
        });
        const rome = phases(seen.rome);
        const milan = phases(seen.milan);
        const line = (p: ReturnType<typeof summarize>) => `${p.requests} requests, ${p.failed} failed`;
        console.log(
          [
            `service continuity (${label}), threshold ${DEFAULT_CONTINUITY_THRESHOLD_MS / 1000} s, link black-holed ${((lightAt - darkFrom) / 1000).toFixed(0)} s:`,
            `  not ready after the black hole: nginx-remote in rome ${(romeAfter! / 1000).toFixed(1)} s, rome's endpoint in milan ${(milanAfter! / 1000).toFixed(1)} s, milan's endpoint of echo imported in rome ${(mcsAfter! / 1000).toFixed(1)} s`,
            `  ready again after the link came back: in rome ${(romeBack! / 1000).toFixed(1)} s, in milan ${(milanBack! / 1000).toFixed(1)} s, echo's import in rome ${(mcsBack! / 1000).toFixed(1)} s`,
            `  stream in rome (http://${MCS_NAME}/): until milan first answered ${
              mcsAll
                .filter((x) => x.at < mcsFrom)
                .map((x) => x.code)
                .join(" ") || "nothing"
            }; baseline ${mcsLine(mcs.baseline)}; dark, until marked (+${SETTLE_MS / 1000} s) ${mcsLine(mcs.untilMarked)}; dark, marked ${mcsLine(mcs.marked)}; after the restore ${mcsLine(mcs.afterRestore)}`,
            ...(["rome", "milan"] as const).map((c) => {
              const p = c === "rome" ? rome : milan;
              return `  stream in ${c} (${streams[c].url}): baseline ${line(p.baseline)}; dark, until marked (+${SETTLE_MS / 1000} s) ${line(p.untilMarked)}; dark, marked ${line(p.marked)}; after the restore ${line(p.afterRestore)}`;
            }),
          ].join("\n"),
        );
        expect(markedDuring).toBe(true);
        // The import: the same slices with milan's endpoint as it exported it; the clusterset stream
        // reached milan before, only rome (at most one failure) once marked, milan again after.
        expect(importedAfter).toEqual(importedBefore);
        expect(mcs.baseline.failed).toBe(0);
        expect(mcs.baseline.milan).toBeGreaterThan(0);
        expect({ requests: mcs.marked.requests >= 20, failed: mcs.marked.failed <= ALLOWED_FAILURES }).toEqual({
          requests: true,
          failed: true,
        });
        expect({ milan: mcs.marked.milan, other: mcs.marked.other }).toEqual({ milan: 0, other: 0 });
        expect({ failed: mcs.afterRestore.failed, milanAnswers: mcs.afterRestore.milan > 0 }).toEqual({
          failed: 0,
          milanAnswers: true,
        });
        expect(reflectedAfter).toEqual(reflectedBefore);
        expect(await uids()).toEqual(before);
        for (const [c, p] of [
          ["rome", rome],
          ["milan", milan],
        ] as const) {
          expect({ stream: c, baselineFailed: p.baseline.failed }).toEqual({ stream: c, baselineFailed: 0 });
          // The dark link cost requests until the endpoints were marked (the fault was real) ...
          expect({ stream: c, failedUntilMarked: p.untilMarked.failed > 0 }).toEqual({
            stream: c,
            failedUntilMarked: true,
          });
          // ... and (almost) none once they were; enough requests went for that to mean something.
          expect({ stream: c, requests: p.marked.requests >= 20, failed: p.marked.failed <= ALLOWED_FAILURES }).toEqual(
            {
              stream: c,
              requests: true,
              failed: true,
            },
          );
          expect({ stream: c, failedAfterRestore: p.afterRestore.failed }).toEqual({
            stream: c,
            failedAfterRestore: 0,
          });
        }
      } finally {
        restore?.();
        for (const cluster of ["rome", "milan"] as const) await inPod(cluster, "touch /tmp/cstop").catch(() => {});
        await inEcho("touch /tmp/mstop").catch(() => {});
        await q.milan.delete(Resources.pods, "continuity-client", twin).catch(() => {});
      }
    }, 400_000);
  });
}
