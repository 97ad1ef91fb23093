// The MCS API on real nodes (issue 31): a Service exported from both clusters of the in-cluster
// quick start, resolved by its clusterset.local name through each cluster's own CoreDNS (which
// liqoctl install made forward the zone to liqo's responder), and answered through the clusterset
// IP by pods of both clusters, across liqo's gateways. Registered by fabricSuite.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ServiceExportResource } from "../../core/apis/multicluster/serviceexport.ts";
import { ServiceImportResource, type ServiceImport } from "../../core/apis/multicluster/serviceimport.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { virtualNodeAffinity } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { waitFor } from "../support/wait.ts";

const NS = "mcs-e2e";
const SVC = "echo";
const NAME = `${SVC}.${NS}.svc.clusterset.local`;
const CLUSTERS = ["rome", "milan"] as const;
type Cluster = (typeof CLUSTERS)[number];
/** Requests per check: with kube-proxy's random choice, both of two clusters answer 24 requests but once in 8 million. */
const N = 24;

type PodObject = KubeObject & { status?: { phase?: string; podIP?: string } };
type Import = ServiceImport & KubeObject;

/** An nginx whose page names its pod (`Server name: echo-<cluster>`), on a physical node, with curl and dig. */
export const echoPod = (cluster: Cluster, ns = NS): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `echo-${cluster}`, namespace: ns, labels: { app: SVC } },
    spec: {
      containers: [{ name: "echo", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }],
      affinity: virtualNodeAffinity("NotIn"),
    },
  }) as KubeObject;

/** The Service `echo` in front of the echo pods, and its ServiceExport. */
export const echoService = (ns = NS): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: SVC, namespace: ns },
    spec: { selector: { app: SVC }, ports: [{ name: "http", port: 80, targetPort: 80, protocol: "TCP" }] },
  }) as KubeObject;

export const echoExport = (ns = NS): KubeObject => ({
  apiVersion: "multicluster.x-k8s.io/v1alpha1",
  kind: "ServiceExport",
  metadata: { name: SVC, namespace: ns },
});

export function clustersetServices(get: () => InClusterQuickstart, label: string): void {
  const client = (c: Cluster) => (c === "rome" ? get().rome : get().milan);
  /** A shell script in the cluster's own echo pod. */
  const sh = (c: Cluster, script: string) =>
    kubectlOn(get(), c, "exec", "-n", NS, `echo-${c}`, "--", "sh", "-c", script);

  /** Which pods answered N requests to the clusterset name, counted per pod. */
  async function answers(from: Cluster): Promise<Record<string, number>> {
    const r = await sh(
      from,
      `for i in $(seq ${N}); do curl -s --max-time 3 http://${NAME}/ | grep -o 'Server name: [a-z-]*' || echo 'Server name: none'; done`,
    );
    const counts: Record<string, number> = {};
    for (const m of r.out.matchAll(/Server name: ([a-z-]+)/g)) counts[m[1]!] = (counts[m[1]!] ?? 0) + 1;
    return counts;
  }

  /** Waits until every cluster's ServiceImport lists exactly `clusters` exporters (by count). */
  const importedFrom = (n: number) =>
    Promise.all(
      CLUSTERS.map((c) =>
        waitFor(
          `${c}: ServiceImport ${NS}/${SVC} backed by ${n} cluster(s)`,
          async () => {
            const si = await client(c).find<Import>(ServiceImportResource, SVC, NS);
            return si?.status?.clusters?.length === n && si.spec.ips?.length ? si : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 300 },
        ),
      ),
    );

  describe(`MCS on real nodes: clusterset.local through CoreDNS, traffic to both clusters, ${label}`, () => {
    let started = 0;
    beforeAll(async () => {
      started = performance.now();
      for (const c of CLUSTERS) {
        const k = client(c);
        await k.create(Resources.namespaces, { metadata: { name: NS } });
        await k.create(Resources.pods, echoPod(c));
        await k.create(Resources.services, echoService());
        await k.create(ServiceExportResource, echoExport());
      }
      await Promise.all(
        CLUSTERS.map((c) =>
          waitFor(
            `${c}: pod ${NS}/echo-${c} Running`,
            async () => {
              const p = await client(c).find<PodObject>(Resources.pods, `echo-${c}`, NS);
              return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
            },
            { timeoutMs: 120_000 },
          ),
        ),
      );
    }, 200_000);

    afterAll(async () => {
      for (const c of CLUSTERS)
        await client(c)
          .delete(Resources.namespaces, NS)
          .catch(() => {});
      console.log(`MCS on real nodes (${label}): ${((performance.now() - started) / 1000).toFixed(0)} s`);
    });

    test("both exports are imported in both clusters; the name resolves to that cluster's clusterset IP (A, TTL ≤ 5 s, and SRV)", async () => {
      const imports = await importedFrom(2);
      for (const [i, c] of CLUSTERS.entries()) {
        const ip = imports[i]!.spec.ips![0]!;
        // getent: the pod's own resolver (search list, ndots) through the cluster's CoreDNS.
        const getent = await waitFor(
          `${c}: getent hosts ${NAME} → ${ip}`,
          async () => {
            const r = await sh(c, `getent hosts ${NAME}`);
            return r.code === 0 && r.out.trim().split(/\s+/)[0] === ip ? r : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        expect(getent.out).toContain(NAME);
        const a = await sh(c, `dig +noall +answer ${NAME} A`);
        const [, ttl, , type, addr] = a.out.trim().split(/\s+/);
        expect([type, addr]).toEqual(["A", ip]);
        expect(Number(ttl)).toBeLessThanOrEqual(5);
        const srv = await sh(c, `dig +short SRV _http._tcp.${NAME}`);
        expect(srv.out.trim()).toBe(`0 100 80 ${NAME}.`);
      }
    }, 150_000);

    test("from a pod in rome and a pod in milan, requests to the name are answered by both clusters", async () => {
      for (const c of CLUSTERS) {
        let last: Record<string, number> = {};
        // Until both answer: kube-proxy programs the imported endpoints a moment after the import.
        await waitFor(
          `${c}: ${N} requests to http://${NAME}/ answered by echo-rome and echo-milan`,
          async () => {
            last = await answers(c);
            return (last["echo-rome"] ?? 0) > 0 && (last["echo-milan"] ?? 0) > 0 ? last : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 1000, describe: () => last },
        );
        console.log(`  ${c} → ${NAME}: ${JSON.stringify(last)}`);
        expect(last.none ?? 0).toBe(0);
      }
    }, 200_000);

    test("unexported in milan: the name still answers, only from rome", async () => {
      await client("milan").delete(ServiceExportResource, SVC, NS);
      await importedFrom(1);
      for (const c of CLUSTERS) {
        let last: Record<string, number> = {};
        await waitFor(
          `${c}: ${N} requests to http://${NAME}/ answered by echo-rome alone`,
          async () => {
            last = await answers(c);
            return last["echo-rome"] === N ? last : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 1000, describe: () => last },
        );
        expect(last).toEqual({ "echo-rome": N });
      }
    }, 150_000);

    test("unexported in rome too: the name is gone (NXDOMAIN) in both clusters", async () => {
      await client("rome").delete(ServiceExportResource, SVC, NS);
      for (const c of CLUSTERS) {
        await waitFor(
          `${c}: ServiceImport ${NS}/${SVC} deleted`,
          async () => !(await client(c).find(ServiceImportResource, SVC, NS)),
          { timeoutMs: 60_000, intervalMs: 300 },
        );
        const r = await waitFor(
          `${c}: dig ${NAME} answers NXDOMAIN`,
          async () => {
            const x = await sh(c, `dig +noall +comments ${NAME} A`);
            return /status: NXDOMAIN/.test(x.out) ? x : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 500 },
        );
        expect(r.out).toContain("status: NXDOMAIN");
        expect((await sh(c, `getent hosts ${NAME}`)).code).not.toBe(0);
      }
    }, 150_000);
  });
}
