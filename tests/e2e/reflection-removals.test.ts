// Removals reach the remote copy: for every built-in kind and a drop-in, a map key, a list item,
// a label, an annotation or a nested field removed locally is removed from the remote copy, with
// the engine running, with the engine stopped meanwhile, and when the remote copy was edited by
// hand under another field manager (what was added there goes away). The remote copy must EQUAL
// the plugin's answer, not merely contain it. rome (local) reflects "rm" into "rm-rome" on milan.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { JsonPatchOp, KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { createReflectionEngine, type ReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { parsePrometheusText } from "../../core/metrics/index.ts";
import { parsePointer } from "../../core/reflection/objects.ts";
import type { BuiltinName } from "../../reflectors/build.ts";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { namespace } from "../support/namespace.ts";
import type { Event } from "../../core/kube/types.ts";

/** The value at an RFC 6901 pointer in obj, undefined when a step is missing. */
function getPointer(obj: unknown, pointer: string): unknown {
  let cur = obj;
  for (const seg of parsePointer(pointer)) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

let rig: TestRig;
let local: KubeClient;
let remote: KubeClient;
const ids = { localClusterId: "rome-rm-id", remoteClusterId: "milan-rm-id" };
const LNS = "rm";
const RNS = "rm-rome";
const FIELD_MANAGER = "liqo-reflection";
// The storage reflector sends only claims of the virtual class placed on its virtual node.
const VIRTUAL_NODE = "liqo-milan-rm";
const builtins: BuiltinName[] = ["configmaps", "secrets", "services", "endpointslices", "ingresses", "storage"];
// Long enough for a loaded 2-core machine, short enough that the code before the fix fails in minutes.
const CONVERGE_MS = 30_000;

async function startEngine(): Promise<ReflectionEngine> {
  const engine = createReflectionEngine({
    local,
    remote,
    ...ids,
    context: { storageClass: "standard", virtualNodeName: VIRTUAL_NODE },
    workers: 2,
  });
  for (const b of builtins) await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
  await engine.addPlugin(await Bun.file(wasmPath("networkpolicy")).bytes(), {
    trust: "dropin",
    source: "test:networkpolicy",
  });
  await engine.addNamespacePair({ localNamespace: LNS, remoteNamespace: RNS });
  return engine;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");
// biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the cluster, asserted on a few fields
const remoteOf = (res: ResourceRef, name: string): Promise<any> => remote.find(res, name, RNS);

interface Case {
  res: ResourceRef;
  /** The local object, without name and namespace. */
  object: KubeObject;
  /** Removed locally (JSON pointers into the local object, later list items first). */
  remove: string[];
  /** Where the removed things were in the remote copy: present before, absent after. */
  removed: string[];
  /** What stays, by pointer, before and after. */
  kept: Record<string, unknown>;
  /** Added to the remote copy by hand, under another field manager; each must go away. */
  vandalise: JsonPatchOp[];
}

const meta = { labels: { team: "x", keep: "y" }, annotations: { note: "n", "keep-note": "k" } };
const metaRemoved = ["/metadata/labels/team", "/metadata/annotations/note"];
const metaKept = { "/metadata/labels/keep": "y", "/metadata/annotations/keep-note": "k" };
const metaVandalised: JsonPatchOp[] = [
  { op: "add", path: "/metadata/labels/hand-made", value: "1" },
  { op: "add", path: "/metadata/annotations/hand-made", value: "1" },
];
const backend = { service: { name: "web", port: { number: 80 } } };
const rule = (host: string) => ({ host, http: { paths: [{ path: "/", pathType: "Prefix", backend }] } });

const cases: Record<string, Case> = {
  ConfigMap: {
    res: Resources.configMaps,
    object: { metadata: meta, data: { a: "1", b: "2" } },
    remove: ["/data/b", ...metaRemoved],
    removed: ["/data/b", ...metaRemoved],
    kept: { "/data/a": "1", ...metaKept },
    vandalise: [...metaVandalised, { op: "add", path: "/data/c", value: "3" }],
  },
  Secret: {
    res: Resources.secrets,
    object: { metadata: meta, type: "Opaque", data: { user: b64("u"), password: b64("p") } },
    remove: ["/data/password", ...metaRemoved],
    removed: ["/data/password", ...metaRemoved],
    kept: { "/data/user": b64("u"), ...metaKept },
    vandalise: [...metaVandalised, { op: "add", path: "/data/token", value: b64("forged") }],
  },
  Service: {
    res: Resources.services,
    object: {
      metadata: meta,
      spec: {
        selector: { app: "svc1" },
        ports: [
          { name: "http", port: 80 },
          { name: "metrics", port: 9090 },
        ],
      },
    },
    remove: ["/spec/selector", "/spec/ports/1", ...metaRemoved],
    removed: ["/spec/selector", "/spec/ports/1", ...metaRemoved],
    kept: { "/spec/ports/0/port": 80, ...metaKept },
    vandalise: [
      ...metaVandalised,
      { op: "add", path: "/spec/selector", value: { app: "elsewhere" } },
      { op: "add", path: "/spec/ports/-", value: { name: "extra", port: 7000 } },
    ],
  },
  EndpointSlice: {
    res: Resources.endpointSlices,
    object: {
      metadata: {
        ...meta,
        labels: {
          ...meta.labels,
          "kubernetes.io/service-name": "svc-rm",
          "endpointslice.kubernetes.io/managed-by": "rm-test",
        },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.100.0.1"] }, { addresses: ["10.100.0.2"] }],
      ports: [
        { name: "http", port: 80, protocol: "TCP" },
        { name: "metrics", port: 9090, protocol: "TCP" },
      ],
    },
    remove: ["/ports/1", "/endpoints/1", ...metaRemoved],
    removed: ["/ports/1", "/endpoints/1", ...metaRemoved],
    kept: { "/endpoints/0/addresses/0": "10.100.0.1", "/ports/0/port": 80, ...metaKept },
    vandalise: [...metaVandalised, { op: "add", path: "/endpoints/-", value: { addresses: ["10.9.9.9"] } }],
  },
  Ingress: {
    res: Resources.ingresses,
    object: {
      metadata: meta,
      spec: { defaultBackend: backend, rules: [rule("a.example.com"), rule("b.example.com")] },
    },
    remove: ["/spec/rules/1", "/spec/defaultBackend", ...metaRemoved],
    removed: ["/spec/rules/1", "/spec/defaultBackend", ...metaRemoved],
    kept: { "/spec/rules/0/host": "a.example.com", ...metaKept },
    vandalise: [...metaVandalised, { op: "add", path: "/spec/tls", value: [{ hosts: ["a.example.com"] }] }],
  },
  PersistentVolumeClaim: {
    // A claim's spec is immutable: labels and annotations are what can be removed.
    res: Resources.persistentVolumeClaims,
    object: {
      metadata: { ...meta, annotations: { ...meta.annotations, "volume.kubernetes.io/selected-node": VIRTUAL_NODE } },
      spec: { storageClassName: "liqo", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    },
    remove: metaRemoved,
    removed: metaRemoved,
    kept: { "/spec/storageClassName": "standard", ...metaKept },
    vandalise: metaVandalised,
  },
  "NetworkPolicy (drop-in)": {
    res: Resources.networkPolicies,
    object: {
      metadata: meta,
      spec: {
        podSelector: { matchLabels: { app: "web", tier: "front" } },
        policyTypes: ["Ingress"],
        ingress: [{ from: [{ ipBlock: { cidr: "10.100.3.0/24" } }] }, { from: [{ podSelector: {} }] }],
      },
    },
    remove: ["/spec/podSelector/matchLabels/tier", "/spec/ingress/1", ...metaRemoved],
    removed: ["/spec/podSelector/matchLabels/tier", "/spec/ingress/1", ...metaRemoved],
    kept: {
      "/spec/podSelector/matchLabels/app": "web",
      "/spec/ingress/0/from/0/ipBlock/cidr": "10.100.3.0/24",
      ...metaKept,
    },
    vandalise: [...metaVandalised, { op: "add", path: "/spec/podSelector/matchLabels/hand-made", value: "1" }],
  },
};
const kinds = Object.keys(cases);
const nameOf = (kind: string, phase: string) => `${kind.split(" ")[0]!.toLowerCase()}-${phase}`;

/** What is wrong with a remote copy that should have converged (an empty list: nothing). */
function problems(copy: unknown, c: Case, extra: JsonPatchOp[] = []): string[] {
  if (!copy) return ["no remote copy"];
  const out: string[] = [];
  for (const p of c.removed) if (getPointer(copy, p) !== undefined) out.push(`${p} is still there`);
  for (const [p, v] of Object.entries(c.kept))
    if (getPointer(copy, p) !== v) out.push(`${p} is ${JSON.stringify(getPointer(copy, p))}, not ${JSON.stringify(v)}`);
  for (const op of extra) {
    const value = JSON.stringify((op as { value: unknown }).value);
    if (op.path.endsWith("/-")) {
      // An item added to a list: no item of the list may still hold it.
      const list = getPointer(copy, op.path.slice(0, -2));
      if (JSON.stringify(list ?? []).includes(value.slice(1, -1)))
        out.push(`the hand-made item ${value} is still in ${op.path.slice(0, -2)}`);
    } else if (getPointer(copy, op.path) !== undefined)
      out.push(`the hand-made ${op.path} is still there: ${JSON.stringify(getPointer(copy, op.path))}`);
  }
  return out;
}

async function converged(kind: string, name: string, extra: JsonPatchOp[] = []) {
  const c = cases[kind]!;
  await waitFor(
    `the remote ${kind} ${name} to equal the answer`,
    async () => problems(await remoteOf(c.res, name), c, extra).length === 0,
    {
      timeoutMs: CONVERGE_MS,
      describe: async () => problems(await remoteOf(c.res, name), c, extra),
    },
  );
}

async function createAndReflect(kind: string, name: string) {
  const c = cases[kind]!;
  await local.create(c.res, { ...c.object, metadata: { ...c.object.metadata, name, namespace: LNS } } as KubeObject);
  const copy = await waitFor(`the remote ${kind} ${name}`, () => remoteOf(c.res, name), { timeoutMs: 120_000 });
  // The test means something only if what is to be removed is there first.
  for (const p of c.removed) expect(getPointer(copy, p)).not.toBeUndefined();
  return copy;
}

const removeLocally = (kind: string, name: string) =>
  local.jsonPatch(
    cases[kind]!.res,
    name,
    LNS,
    cases[kind]!.remove.map((path) => ({ op: "remove" as const, path })),
  );

const vandalise = (kind: string, name: string) =>
  remote.jsonPatch(cases[kind]!.res, name, RNS, cases[kind]!.vandalise, { fieldManager: "kubectl-edit" });

beforeAll(async () => {
  await ensureBuilt([...builtins, "networkpolicy"]);
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  local = rig.client("rome");
  remote = rig.client("milan");
  await namespace(local, LNS);
  await namespace(remote, RNS);
}, 600_000);

afterAll(async () => {
  await rig?.down();
});

describe("removals reach the remote copy", () => {
  let engine: ReflectionEngine | undefined;
  beforeAll(async () => {
    engine = await startEngine();
  }, 300_000);
  afterAll(() => engine?.stop());

  test.each(kinds)(
    "%s: created by server-side apply, every field owned by the engine's one field manager",
    async (kind) => {
      const copy = await createAndReflect(kind, nameOf(kind, "live"));
      const ours = (
        copy.metadata.managedFields as { manager: string; operation: string; subresource?: string }[]
      ).filter((e) => e.manager === FIELD_MANAGER && !e.subresource);
      expect(ours.map((e) => e.operation)).toEqual(["Apply"]);
    },
    180_000,
  );

  test.each(kinds)(
    "%s: a key, a list item, a label, an annotation and nested fields removed locally",
    async (kind) => {
      const name = nameOf(kind, "live");
      await removeLocally(kind, name);
      await converged(kind, name);
    },
    180_000,
  );

  test.each(kinds)(
    "%s: what another field manager added to the remote copy goes away",
    async (kind) => {
      const name = nameOf(kind, "live");
      await vandalise(kind, name);
      await converged(kind, name, cases[kind]!.vandalise);
    },
    180_000,
  );

  test("the issue's walk-through: cm1, a Secret, a Service; removed keys stay removed after a later change", async () => {
    await local.create(Resources.configMaps, {
      metadata: { name: "cm1", namespace: LNS, labels: { team: "x" } },
      data: { a: "1", b: "2" },
    });
    await local.create(Resources.secrets, {
      metadata: { name: "creds", namespace: LNS },
      stringData: { user: "u", password: "p" },
    });
    await local.create(Resources.services, {
      metadata: { name: "svc1", namespace: LNS },
      spec: { selector: { app: "svc1" }, ports: [{ port: 80 }] },
    });
    await waitFor(
      "the three remote copies",
      async () =>
        (await remoteOf(Resources.configMaps, "cm1"))?.data?.b === "2" &&
        (await remoteOf(Resources.secrets, "creds"))?.data?.password &&
        (await remoteOf(Resources.services, "svc1"))?.spec?.selector?.app === "svc1",
      { timeoutMs: 120_000 },
    );
    await local.jsonPatch(Resources.configMaps, "cm1", LNS, [
      { op: "remove", path: "/data/b" },
      { op: "remove", path: "/metadata/labels/team" },
    ]);
    await local.jsonPatch(Resources.secrets, "creds", LNS, [{ op: "remove", path: "/data/password" }]);
    await local.jsonPatch(Resources.services, "svc1", LNS, [{ op: "remove", path: "/spec/selector" }]);
    const state = async () => {
      const [cm, s, svc] = await Promise.all([
        remoteOf(Resources.configMaps, "cm1"),
        remoteOf(Resources.secrets, "creds"),
        remoteOf(Resources.services, "svc1"),
      ]);
      return {
        data: cm?.data,
        team: cm?.metadata?.labels?.team,
        secret: Object.keys(s?.data ?? {}),
        selector: svc?.spec?.selector,
      };
    };
    await waitFor(
      "b, team, password and the selector to be gone from milan",
      async () => {
        const s = await state();
        return (
          s.data?.b === undefined && s.team === undefined && !s.secret.includes("password") && s.selector === undefined
        );
      },
      { timeoutMs: CONVERGE_MS, describe: state },
    );
    await local.mergePatch(Resources.configMaps, "cm1", LNS, { data: { a: "9" } });
    await waitFor(
      "the new a, and still no b",
      async () => {
        const s = await state();
        return s.data?.a === "9" && s.data?.b === undefined && s.team === undefined;
      },
      { timeoutMs: CONVERGE_MS, describe: state },
    );
  }, 300_000);

  test("once converged, handling every object again writes nothing: each copy equals its answer", async () => {
    const e = engine!;
    const writes = async () =>
      parsePrometheusText(await e.registry.expose())
        .find((f) => f.name === "liqo_reflection_reconciles_total")
        ?.samples.filter((x) => x.labels.outcome === "apply" || x.labels.outcome === "repair")
        .reduce((sum, x) => sum + x.value, 0) ?? 0;
    const handled = () => e.reflectors().reduce((sum, r) => sum + r.handled, 0);
    const drained = () => e.reflectors().every((r) => r.queueDepth === 0);
    await waitFor("the queues to drain", drained);
    let objects = 0;
    for (const c of Object.values(cases)) objects += (await local.list(c.res, { namespace: LNS })).items.length;
    const [before, seen] = [await writes(), handled()];
    e.requeueAll();
    await waitFor("every local object handled again", () => handled() >= seen + objects && drained(), {
      timeoutMs: CONVERGE_MS,
    });
    expect(await writes()).toBe(before);
  }, 120_000);
});

describe("creating by apply", () => {
  test("a foreign object made in the same moment, with no field in conflict, is left exactly as it was", async () => {
    const engine = await startEngine();
    try {
      const all = Array.from({ length: 10 }, (_, i) => `race-${i}`);
      // Different keys on each side: a non-forced apply meets no conflict, so only the engine's
      // check of 201 against 200 keeps it off theirs (when the race lands that way).
      const foreignWon = await Promise.all(
        all.map(async (n) => {
          const [theirs] = await Promise.all([
            remote.create(Resources.configMaps, { metadata: { name: n, namespace: RNS }, data: { theirs: "1" } }).then(
              () => true,
              () => false,
            ),
            local.create(Resources.configMaps, { metadata: { name: n, namespace: LNS }, data: { ours: "2" } }),
          ]);
          return theirs;
        }),
      );
      const names = all.filter((_, i) => foreignWon[i]);
      await waitFor(
        "a ReflectionConflict Event for every name milan's client won",
        async () => {
          const evs = await local.list<Event>(Resources.events, { namespace: LNS });
          return names.every((n) =>
            evs.items.some((e) => e.reason === "ReflectionConflict" && e.involvedObject.name === n),
          );
        },
        { timeoutMs: 120_000 },
      );
      for (const n of names) {
        const theirs = await remoteOf(Resources.configMaps, n);
        expect(theirs.data).toEqual({ theirs: "1" });
        expect(theirs.metadata.labels).toBeUndefined();
        expect((theirs.metadata.managedFields as { manager: string }[]).some((e) => e.manager === FIELD_MANAGER)).toBe(
          false,
        );
      }
    } finally {
      await engine.stop();
    }
  }, 300_000);
});

describe("removals made while the engine is stopped", () => {
  test("every kind converges once the engine starts again, hand edits of the remote copies included", async () => {
    let engine = await startEngine();
    try {
      for (const kind of kinds) await createAndReflect(kind, nameOf(kind, "restart"));
    } finally {
      await engine.stop();
    }
    for (const kind of kinds) {
      await removeLocally(kind, nameOf(kind, "restart"));
      await vandalise(kind, nameOf(kind, "restart"));
    }
    engine = await startEngine();
    try {
      for (const kind of kinds) await converged(kind, nameOf(kind, "restart"), cases[kind]!.vandalise);
    } finally {
      await engine.stop();
    }
  }, 600_000);
});
