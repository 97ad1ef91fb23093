import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { localVirtualVolume, remoteVirtualVolume, type Claim } from "../core/storage/forge.ts";
import {
  fabricRefusal,
  lastProgress,
  moveRefusal,
  peersCrossed,
  podsUsing,
  receiverScript,
  recreatedClaim,
  sourceScript,
  temporaryClaim,
  verifiedDigest,
} from "./storage-move.ts";

const claim: Claim = {
  metadata: {
    name: "data",
    namespace: "app",
    uid: "u1",
    labels: { app: "db" },
    annotations: { "pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "n1", keep: "me" },
  },
  spec: {
    storageClassName: "liqo",
    volumeName: "pvc-u1",
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "1Gi" } },
  },
};
const real = {
  metadata: { name: "r" },
  spec: {
    hostPath: { path: "/x" },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["n1"] }] }],
      },
    },
  },
};
const localPv = localVirtualVolume(claim, real, "u1");
const node = (name: string, labels: Record<string, string> = {}) => ({ metadata: { name, labels } });
const milan = node("liqo-milan", {
  "liqo.io/type": "virtual-node",
  "liqo.io/remote-cluster-id": "m",
  "storage.liqo.io/available": "true",
});
const base = {
  key: "app/data",
  claim,
  volume: localPv,
  virtualClass: "liqo",
  target: milan,
  targetName: "liqo-milan",
  users: [] as string[],
};

describe("moveRefusal", () => {
  test("a move to a peer that offers storage starts", () => expect(moveRefusal(base)).toBeUndefined());
  test("no such claim", () => expect(moveRefusal({ ...base, claim: undefined })).toBe("claim app/data not found"));
  test("another class", () =>
    expect(moveRefusal({ ...base, claim: { ...claim, spec: { ...claim.spec, storageClassName: "fast" } } })).toContain(
      "only claims of the virtual class liqo",
    ));
  test("not bound", () => expect(moveRefusal({ ...base, volume: undefined })).toContain("is not bound yet"));
  test("no such node", () =>
    expect(moveRefusal({ ...base, target: undefined, targetName: "nowhere" })).toContain(
      "node nowhere does not exist",
    ));
  test("a virtual node without storage", () =>
    expect(
      moveRefusal({ ...base, target: node("liqo-x", { "liqo.io/type": "virtual-node" }), targetName: "liqo-x" }),
    ).toContain("offers no storage"));
  test("in use", () => expect(moveRefusal({ ...base, users: ["db-0"] })).toContain("used by pod(s) db-0"));
  test("already there (a node)", () =>
    expect(moveRefusal({ ...base, target: node("n1"), targetName: "n1" })).toBe("claim app/data is already on n1"));
  test("already there (a peer)", () =>
    expect(moveRefusal({ ...base, volume: remoteVirtualVolume(claim, "m") })).toContain("already on liqo-milan"));
});

test("podsUsing: running and pending pods that mount the claim", () => {
  const pod = (name: string, phase: string, claimName: string) => ({
    metadata: { name },
    spec: { volumes: [{ persistentVolumeClaim: { claimName } }] },
    status: { phase },
  });
  expect(
    podsUsing(
      [
        pod("a", "Running", "data"),
        pod("b", "Succeeded", "data"),
        pod("c", "Pending", "data"),
        pod("d", "Running", "other"),
      ],
      "data",
    ),
  ).toEqual(["a", "c"]);
});

test("the temporary claim and the claim made again keep size, modes, class; the binding goes", () => {
  expect(temporaryClaim(claim, "data-liqo-move").spec).toEqual({
    storageClassName: "liqo",
    accessModes: ["ReadWriteOnce"],
    volumeMode: undefined,
    resources: { requests: { storage: "1Gi" } },
  });
  const again = recreatedClaim(claim);
  expect(again.metadata.annotations).toEqual({ keep: "me" });
  expect(again.metadata.labels).toEqual({ app: "db" });
  expect(again.spec).not.toHaveProperty("volumeName");
});

test("progress is the receiver's last progress line", () => {
  expect(lastProgress("progress 1 10\nprogress 5 10\n")).toEqual({ copied: 5, total: 10 });
  expect(lastProgress("serving")).toBeUndefined();
});

describe("peersCrossed", () => {
  test("physical node to physical node: no peer", () => expect(peersCrossed(localPv, node("n2"))).toEqual([]));
  test("here to a peer: the target's cluster", () => expect(peersCrossed(localPv, milan)).toEqual(["m"]));
  test("a peer to here: the cluster holding the data", () =>
    expect(peersCrossed(remoteVirtualVolume(claim, "m"), node("n1"))).toEqual(["m"]));
  test("one peer to another: both", () => {
    const venice = node("liqo-venice", { "liqo.io/type": "virtual-node", "liqo.io/remote-cluster-id": "v" });
    expect(peersCrossed(remoteVirtualVolume(claim, "m"), venice)).toEqual(["m", "v"]);
  });
});

describe("fabricRefusal", () => {
  const rows = [
    { check: "WireGuard tunnel", ok: true, detail: "Connected" },
    { check: "active gateway here", ok: false, detail: "no Ready gateway pod" },
    { check: "virtual node", ok: false, detail: "liqo-milan not Ready" },
  ];
  test("every check passed: no refusal", () => expect(fabricRefusal("app/data", "milan", [rows[0]!])).toBeUndefined());
  test("names the claim, the peer, each failed check and what to run; passed checks left out", () => {
    const r = fabricRefusal("app/data", "milan", rows)!;
    expect(r).toContain("app/data");
    expect(r).toContain("active gateway here: no Ready gateway pod; virtual node: liqo-milan not Ready");
    expect(r).toContain("Nothing was changed");
    expect(r).toContain("liqoctl test network milan");
    expect(r).not.toContain("Connected");
  });
});

describe("the copy scripts, run here (tar, sha256sum) on folders in place of the volumes", () => {
  const root = mkdtempSync(join(tmpdir(), "liqo-move-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const folder = (name: string) => {
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const receive = async (source: string, data: string, expectDigest?: string) => {
    const p = Bun.spawn([process.execPath, "-e", receiverScript], {
      env: { ...process.env, SOURCE: source, DATA: data, ...(expectDigest && { EXPECT: expectDigest }) },
      stdout: "pipe",
    });
    const out = await new Response(p.stdout).text();
    return { code: await p.exited, last: out.trim().split("\n").at(-1) ?? "" };
  };

  test("the receiver gets every file and names the digest; given the first copy's digest, a source holding other files is refused", async () => {
    const src = folder("src");
    mkdirSync(join(src, "sub"));
    writeFileSync(join(src, "blob"), crypto.getRandomValues(new Uint8Array(200_000)));
    writeFileSync(join(src, "sub", "f"), "hi\n");
    // A free port: the source script listens on PORT.
    const probe = Bun.serve({ port: 0, fetch: () => new Response() });
    const port = probe.port;
    probe.stop(true);
    const server = Bun.spawn([process.execPath, "-e", sourceScript], {
      env: { ...process.env, DATA: src, PORT: String(port) },
      stdout: "pipe",
    });
    try {
      const reader = server.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain(`serving ${src}`);
      const source = `http://127.0.0.1:${port}`;

      const first = await receive(source, folder("a"));
      expect(first.code).toBe(0);
      expect(first.last).toMatch(/^verified 2 files, digest [0-9a-f]{64}$/);
      const digest = verifiedDigest(first.last)!;
      expect(readFileSync(join(root, "a", "blob"))).toEqual(readFileSync(join(src, "blob")));
      expect(readFileSync(join(root, "a", "sub", "f"), "utf8")).toBe("hi\n");

      const same = await receive(source, folder("b"), digest);
      expect(same).toEqual({ code: 0, last: first.last });

      // The source lost a file meanwhile (as a volume replaced by an empty one would).
      rmSync(join(src, "sub", "f"));
      const other = await receive(source, folder("c"), digest);
      expect(other.code).toBe(5);
      expect(other.last).toContain("does not hold the files the first copy verified");
      // Without the digest, the copy of what is there passes: the check is what catches it.
      expect((await receive(source, folder("d"))).code).toBe(0);
    } finally {
      server.kill();
      await server.exited;
    }
  });

  test("verifiedDigest reads the receiver's last line only", () => {
    expect(verifiedDigest(`verified 3 files, digest ${"a".repeat(64)}`)).toBe("a".repeat(64));
    expect(verifiedDigest("verified 3 files")).toBeUndefined();
    expect(verifiedDigest("error: checksums differ")).toBeUndefined();
  });
});
