// WAN discovery against a real DNS server: CoreDNS (the rig's build) serving a zone file on
// loopback, the SearchDomain controller against a rig cluster's API server, and small HTTPS
// servers on loopback standing for the listed clusters' auth services (GET /ids). Clusters are
// added as the zone lists them, followed when their address changes, removed when they leave;
// records that are wrong are named in the SearchDomain's status; a DNS server that stops
// answering removes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ForeignClusterResource, SearchDomainResource, installCrds, type SearchDomain } from "../../core/apis/index.ts";
import { createSearchDomainController, type SearchDomainController } from "../../core/discovery/wan.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import type { KubeObject } from "../../core/kube/resources.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { freePort } from "../rig/ports.ts";
import { startTestRig, testRigRoot, type TestRig } from "../rig/testing.ts";
import { startFakeAuthService } from "../support/fake-auth.ts";
import { waitFor } from "../support/wait.ts";

const MILAN = "4858caa2-7848-4aab-a6b4-6984389bac56";
const TURIN = "7a1a7a1a-0000-4000-8000-000000000001";
let rig: TestRig;
let dir: string;
let dnsPort: number;
let coredns: ReturnType<typeof Bun.spawn> | undefined;
let controller: SearchDomainController;
const servers: { stop(): void }[] = [];
let serial = 1;

function fakeAuthService(clusterId: string, clusterName: string): string {
  const server = startFakeAuthService({ hostname: "127.0.0.1", clusterId, clusterName, tmpRoot: dir });
  servers.push(server);
  return String(server.port);
}

/** Writes the zone (a new SOA serial, so CoreDNS reloads it). */
function zone(entries: { id: string; name: string; port: string; txt?: string[] }[]): void {
  const lines = [
    "$ORIGIN example.test.",
    `@ 60 IN SOA ns.example.test. admin.example.test. ${serial++} 7200 3600 1209600 60`,
    "@ 60 IN NS ns.example.test.",
    "ns 60 IN A 127.0.0.1",
    ...entries.flatMap((e) => [
      `_liqo_auth._tcp 60 IN PTR ${e.id}._liqo_auth._tcp.example.test.`,
      `${e.id}._liqo_auth._tcp 60 IN SRV 0 0 ${e.port} auth-${e.name}.example.test.`,
      `${e.id}._liqo_auth._tcp 60 IN TXT ${(e.txt ?? [`id=${e.id}`, `name=${e.name}`]).map((t) => `"${t}"`).join(" ")}`,
      `auth-${e.name} 60 IN A 127.0.0.1`,
    ]),
  ];
  writeFileSync(join(dir, "db.example.test"), `${lines.join("\n")}\n`);
}

function startCoreDns() {
  coredns = Bun.spawn([join(rig.bin, "coredns"), "-conf", join(dir, "Corefile")], {
    stdout: "ignore",
    stderr: "ignore",
  });
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  dir = mkdtempSync(join(testRigRoot, "wan-"));
  dnsPort = await freePort();
  zone([]);
  writeFileSync(
    join(dir, "Corefile"),
    `example.test:${dnsPort} {\n  bind 127.0.0.1\n  file ${join(dir, "db.example.test")} {\n    reload 1s\n  }\n}\n`,
  );
  startCoreDns();
  await installCrds(rig.client("rome"));
  controller = createSearchDomainController({
    client: rig.client("rome"),
    localClusterId: "rome-id",
    dnsServer: { host: "127.0.0.1", port: dnsPort },
    resyncMs: 1_000,
  });
  await controller.start();
}, 300_000);

afterAll(async () => {
  await controller?.stop();
  coredns?.kill();
  for (const s of servers) s.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  await rig?.down();
}, 120_000);

const client = () => rig.client("rome");
const wan = async () =>
  (
    await client().list<ForeignClusterObject>(ForeignClusterResource, {
      labelSelector: "discovery.liqo.io/searchdomain=example",
    })
  ).items;
const byName = async () => Object.fromEntries((await wan()).map((f) => [f.metadata.name!, f.spec.foreignAuthUrl]));
const domain = () => client().get<SearchDomain & KubeObject>(SearchDomainResource, "example");

describe("WAN discovery through a SearchDomain", () => {
  let milanPort = "";
  test("a SearchDomain that is not a DNS domain is refused by the API server, naming the field", async () => {
    const err = await client()
      .create(SearchDomainResource, {
        apiVersion: "discovery.liqo.io/v1alpha1",
        kind: "SearchDomain",
        metadata: { name: "bad" },
        spec: { domain: "not a domain!" },
      } as KubeObject)
      .catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as Error).message).toContain("spec.domain");
  });

  test("every cluster the domain lists becomes a ForeignCluster of discovery type WAN, with its auth service", async () => {
    milanPort = fakeAuthService(MILAN, "milan");
    const turinPort = fakeAuthService(TURIN, "turin");
    zone([
      { id: MILAN, name: "milan", port: milanPort },
      { id: TURIN, name: "turin", port: turinPort },
    ]);
    await client().create(SearchDomainResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "SearchDomain",
      metadata: { name: "example" },
      spec: { domain: "example.test", autojoin: false },
    } as KubeObject);
    const found = await waitFor(
      "milan and turin discovered",
      async () => {
        const m = await byName();
        return Object.keys(m).length === 2 ? m : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(found).toEqual({ milan: `https://127.0.0.1:${milanPort}`, turin: `https://127.0.0.1:${turinPort}` });
    const milan = (await wan()).find((f) => f.metadata.name === "milan")!;
    expect(milan.metadata.labels).toMatchObject({
      "discovery.liqo.io/discovery-type": "WAN",
      "discovery.liqo.io/cluster-id": MILAN,
      "discovery.liqo.io/autojoin": "false",
    });
    const status = await waitFor("the SearchDomain's status", async () =>
      (await domain()).status?.foreignClusters?.length === 2 ? (await domain()).status : undefined,
    );
    expect(status!.problem).toBe("");
  }, 120_000);

  test("a cluster leaving the domain is removed, an address change is followed, wrong records are named in the status", async () => {
    const moved = fakeAuthService(MILAN, "milan-moved");
    const liar = fakeAuthService(MILAN, "liar"); // answers /ids as milan, listed under another ID
    zone([
      { id: MILAN, name: "milan", port: moved },
      {
        id: "bbbbbbbb-0000-4000-8000-000000000002",
        name: "bad",
        port: "1",
        txt: ["id=bbbbbbbb-0000-4000-8000-000000000002", "name=Not_A_Name"],
      },
      { id: "cccccccc-0000-4000-8000-000000000003", name: "liar", port: liar },
    ]);
    const now = await waitFor(
      "turin gone and milan's new address",
      async () => {
        const m = await byName();
        return !m.turin && m.milan === `https://127.0.0.1:${moved}` ? m : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(Object.keys(now)).toEqual(["milan"]);
    const problem = await waitFor(
      "the problems in the status",
      async () => {
        const p = (await domain()).status?.problem ?? "";
        return p.includes("Not_A_Name") && p.includes("answers as cluster liar") ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(problem).toContain("TXT name=");
  }, 120_000);

  test("a DNS server that stops answering removes nothing and says so", async () => {
    coredns?.kill();
    await coredns?.exited;
    const problem = await waitFor(
      "the lookup failure in the status",
      async () => {
        const p = (await domain()).status?.problem ?? "";
        return p.includes("no answer from 127.0.0.1") ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(problem).toContain("the ForeignClusters found before are kept");
    expect(Object.keys(await byName())).toEqual(["milan"]);
    startCoreDns();
    await waitFor(
      "lookups working again",
      async () => (await domain()).status?.problem?.includes("no answer") === false,
      { timeoutMs: 30_000 },
    );
  }, 120_000);

  test("autojoin on the SearchDomain labels its ForeignClusters; deleting it removes them", async () => {
    await client().mergePatch(SearchDomainResource, "example", undefined, { spec: { autojoin: true } });
    await waitFor(
      "the autojoin label",
      async () => (await wan())[0]?.metadata.labels?.["discovery.liqo.io/autojoin"] === "true",
      { timeoutMs: 30_000 },
    );
    await client().delete(SearchDomainResource, "example");
    await waitFor("the SearchDomain's ForeignClusters gone", async () => (await wan()).length === 0, {
      timeoutMs: 30_000,
    });
  }, 120_000);
});
