import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type CheckResult, likelyCause, parseProbeReport, probeScript, renderTable } from "./probes.ts";
import { startTestServer, type TestServer } from "./server.ts";

const facts = { remoteNatPodCidr: "None", localNatPodCidr: "None" };
const r = (id: CheckResult["id"], ok: boolean, detail = ""): CheckResult => ({ id, ok, detail });

describe("probeScript", () => {
  test("refuses a target that is not an address or a name (it would be shell)", () => {
    expect(() =>
      probeScript([{ id: "pod-to-remote-pod", kind: "http", target: "1.2.3.4; rm -rf /", server: "x" }], 5),
    ).toThrow(/pod-to-remote-pod: target .* is not an address/);
  });
  test("refuses a budget that is not a whole number of seconds", () => {
    expect(() => probeScript([], 0)).toThrow(/whole number of seconds/);
    expect(() => probeScript([], 1.5)).toThrow(/whole number of seconds/);
  });
  test("quotes the server name", () => {
    expect(probeScript([{ id: "pod-to-service", kind: "http", target: "a.b", server: "it's" }], 3)).toContain(
      `'it'\\''s'`,
    );
  });
});

// The script itself, run by sh on this machine against the test server in this process (what a probe pod does).
describe("the probe script against real servers", () => {
  // The server pods' own program (liqo test-server), on ports of this machine.
  const bytes = 70_000;
  let server: TestServer;
  const web = {
    get port() {
      return server.httpPort;
    },
  };
  const bulk = {
    get port() {
      return server.bulkPort;
    },
  };
  beforeAll(async () => {
    server = await startTestServer({
      name: "server-remote",
      httpPort: 0,
      bulkPort: 0,
      bulkBytes: bytes,
      hostname: "127.0.0.1",
    });
  });
  afterAll(() => server.stop());

  async function run(script: string): Promise<CheckResult[]> {
    const p = Bun.spawn(["sh", "-c", script], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(p.stdout).text();
    expect(await p.exited).toBe(0);
    return parseProbeReport(out);
  }

  test("a page naming the expected server passes; one naming another fails; a closed port fails with curl's error", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const closedPort = closed.port;
    closed.stop(true);
    const results = await run(
      probeScript(
        [
          { id: "pod-to-remote-pod", kind: "http", target: `127.0.0.1:${web.port}`, server: "server-remote" },
          { id: "pod-to-service", kind: "http", target: `127.0.0.1:${web.port}`, server: "server-local" },
          { id: "node-to-remote-pod", kind: "http", target: `127.0.0.1:${closedPort}`, server: "server-remote" },
        ],
        1,
      ),
    );
    expect(results.find((x) => x.id === "pod-to-remote-pod")).toEqual({
      id: "pod-to-remote-pod",
      ok: true,
      detail: "answered by server-remote",
    });
    const wrong = results.find((x) => x.id === "pod-to-service")!;
    expect(wrong.ok).toBe(false);
    expect(wrong.detail).toContain("answered, but not by server-local");
    const refused = results.find((x) => x.id === "node-to-remote-pod")!;
    expect(refused.ok).toBe(false);
    expect(refused.detail).toMatch(/Failed to connect|Connection refused|Couldn't connect/);
  });

  test("refused: a closed port passes after three failed tries; a server that answers fails, naming it", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const closedPort = closed.port;
    closed.stop(true);
    const results = await run(
      probeScript(
        [
          { id: "peer-pod-to-pod", kind: "refused", target: `127.0.0.1:${closedPort}`, server: "server-private" },
          { id: "pod-to-peer-pod", kind: "refused", target: `127.0.0.1:${web.port}`, server: "server-peer" },
        ],
        1,
      ),
    );
    const blocked = results.find((x) => x.id === "peer-pod-to-pod")!;
    expect(blocked.ok).toBe(true);
    expect(blocked.detail).toMatch(
      /^not answered in 3 tries, as the security mode requires: .*(Failed to connect|Couldn't connect)/,
    );
    expect(results.find((x) => x.id === "pod-to-peer-pod")).toEqual({
      id: "pod-to-peer-pod",
      ok: false,
      detail: "server-peer answered: the security mode lets it through",
    });
  });

  test("bulk: every byte counts; fewer than announced fails", async () => {
    const results = await run(
      probeScript(
        [
          { id: "tcp-bulk", kind: "bulk", target: "127.0.0.1", port: bulk.port, bytes },
          { id: "remote-tcp-bulk", kind: "bulk", target: "127.0.0.1", port: bulk.port, bytes: bytes + 1 },
        ],
        1,
      ),
    );
    expect(results.find((x) => x.id === "tcp-bulk")).toEqual({
      id: "tcp-bulk",
      ok: true,
      detail: `${bytes} bytes received`,
    });
    expect(results.find((x) => x.id === "remote-tcp-bulk")).toEqual({
      id: "remote-tcp-bulk",
      ok: false,
      detail: `received ${bytes} of ${bytes + 1} bytes`,
    });
  });

  test("mtu: on loopback every DF size up to eth0's MTU passes", async () => {
    const [mtu] = await run(probeScript([{ id: "path-mtu", kind: "mtu", target: "127.0.0.1" }], 5));
    expect(mtu!.ok).toBe(true);
    expect(mtu!.detail).toMatch(/^path MTU \d+ \(the pod MTU\)/);
  });
});

describe("parseProbeReport", () => {
  test("reads id, verdict and detail; ignores anything else", () => {
    expect(
      parseProbeReport(
        "sh: 1: oops\npath-mtu\tok\tpath MTU 1440\nbogus\tok\tx\ntcp-bulk\tmaybe\tx\ntcp-bulk\tfail\treceived 3 of 9 bytes\n",
      ),
    ).toEqual([r("path-mtu", true, "path MTU 1440"), r("tcp-bulk", false, "received 3 of 9 bytes")]);
  });
});

describe("likelyCause", () => {
  test("pod → remote pod: the node gets through, so the pod's node does not forward", () => {
    const failed = r("pod-to-remote-pod", false);
    expect(likelyCause(failed, [failed, r("node-to-remote-pod", true)], facts)).toContain("route agent on that node");
  });
  test("pod → remote pod: the other way works, so it is NAT", () => {
    const failed = r("pod-to-remote-pod", false);
    expect(likelyCause(failed, [failed, r("remote-pod-to-pod", true)], facts)).toContain("one way only");
  });
  test("pod → remote pod: nothing works, so the tunnel, naming the remapping", () => {
    const failed = r("pod-to-remote-pod", false);
    expect(
      likelyCause(failed, [failed, r("remote-pod-to-pod", false)], { ...facts, remoteNatPodCidr: "10.1.0.0/16" }),
    ).toContain("nothing crosses the tunnel (the peer's pods are remapped to 10.1.0.0/16 here)");
  });
  test("Service fails while the pod answers: the EndpointSlice", () => {
    const failed = r("pod-to-service", false);
    expect(likelyCause(failed, [failed, r("pod-to-remote-pod", true)], facts)).toContain("EndpointSlice");
  });
  test("reflected Service fails while the pod answers: reflection or translation", () => {
    const failed = r("remote-pod-to-reflected-service", false);
    expect(likelyCause(failed, [failed, r("remote-pod-to-pod", true)], facts)).toContain("EndpointSlice reflection");
  });
  test("a PMTUD black hole is named as such", () => {
    const failed = r(
      "path-mtu",
      false,
      "path MTU 1400; 1401 bytes with DF vanish without an ICMP fragmentation-needed (a PMTUD black hole)",
    );
    expect(likelyCause(failed, [failed], facts)).toContain("ICMP fragmentation-needed is dropped");
  });
  test("bulk fails while small requests pass: packets near the MTU", () => {
    const failed = r("tcp-bulk", false, "received 0 of 1048576 bytes");
    expect(likelyCause(failed, [failed, r("pod-to-remote-pod", true)], facts)).toContain(
      "packets near the MTU are lost",
    );
  });
});

test("renderTable aligns the columns", () => {
  expect(
    renderTable([
      { check: "a", result: "passed", detail: "x" },
      { check: "longer", result: "FAILED", detail: "y" },
    ]),
  ).toBe(["CHECK    RESULT   DETAIL", "a        passed   x", "longer   FAILED   y"].join("\n"));
});
