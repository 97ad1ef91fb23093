// The live wire (built-ins read the host's objects by handle) must answer exactly what the JSON
// wire answers (drop-ins in workers, `live: false`): every built-in, its sample and variants of
// it, including members a hostile or careless user could write into an object.
import { afterAll, describe, expect, test } from "bun:test";
import { ensureBuilt } from "../../reflectors/build.ts";
import { loadBuiltin, type BuiltinName } from "../../reflectors/index.ts";
import * as s from "../../reflectors/samples.ts";
import type { KubeObject, ReflectionContext } from "./abi.ts";
import type { ReflectorPlugin } from "./host.ts";

await ensureBuilt(["pods", "services", "endpointslices", "ingresses", "storage", "configmaps", "secrets"]);

const ctx: ReflectionContext = { ...s.ctx, remoteRestarts: 1 };
const lookup = (req: { kind: string; name: string }) =>
  req.kind === "ServiceAccount" && req.name === "builder" ? s.serviceAccount : null;
const open: ReflectorPlugin[] = [];
afterAll(async () => {
  for (const p of open) await p.close();
});
const load = async (name: BuiltinName, live: boolean) => {
  const p = await loadBuiltin(name, {
    lookup,
    live,
    memoEntries: 0,
    translateIp: (ip) => ip.replace(/^10\.244\./, "10.99."),
  });
  open.push(p);
  return p;
};
const answer = (
  p: ReflectorPlugin,
  dir: "forward" | "backward",
  src: KubeObject | null,
  tgt: KubeObject | null,
): unknown => {
  try {
    return dir === "forward" ? p.forwardSync(src, tgt, ctx) : p.backwardSync(src, tgt, ctx);
  } catch (err) {
    return { error: (err as { code?: string }).code ?? String(err) };
  }
};

const cases: Array<[BuiltinName, "forward" | "backward", KubeObject, KubeObject | null]> = [
  ["pods", "forward", s.pod, null],
  ["pods", "backward", s.remotePod, s.pod],
  ["services", "forward", s.service, null],
  ["endpointslices", "forward", s.endpointSlice, null],
  ["ingresses", "forward", s.ingress, null],
  ["storage", "forward", s.pvc, null],
  ["configmaps", "forward", s.configMap, null],
  ["secrets", "forward", s.saSecret, null],
];

/** Objects as a user could write them: JSON.parse makes `__proto__` an own member. */
const hostile = (obj: KubeObject): KubeObject[] => {
  const text = JSON.stringify(obj);
  const meta = obj.metadata!;
  return [
    JSON.parse(
      text.replace('"metadata":{', '"metadata":{"__proto__":{"annotations":{"liqo.io/skip-reflection":"true"}},'),
    ),
    { ...obj, metadata: { ...meta, annotations: JSON.parse('{"__proto__":"x","constructor":"y","toString":"z"}') } },
    { ...obj, metadata: { ...meta, labels: { ...meta.labels, "ünï/cödé": "välue ✓", "": "" } } },
    { ...obj, spec: [] as unknown as Record<string, unknown> },
    { ...obj, spec: "text" as unknown as Record<string, unknown> },
    {
      ...obj,
      status: {
        podIP: 7,
        podIPs: [{ ip: null }, "x", { ip: "10.244.0.9", extra: true }],
        containerStatuses: [{ restartCount: "3" }, null],
      },
    },
    {
      ...obj,
      endpoints: [
        null,
        1,
        { addresses: "10.244.0.1" },
        { addresses: [5, "10.244.0.2"], nodeName: s.ctx.virtualNodeName },
      ],
    } as KubeObject,
    {
      ...obj,
      metadata: {
        ...meta,
        annotations: { "liqo.io/force-remote-node-port": "true", "liqo.io/skip-reflection": "false" },
      },
    },
    { ...obj, metadata: { ...meta, name: "x".repeat(70_000) } },
    { ...obj, data: { big: "y".repeat(1 << 20) } } as KubeObject,
  ];
};

describe("live wire against the JSON wire", () => {
  for (const [name, dir, sample, target] of cases) {
    test(`${name} ${dir}: the sample, a deleted source, a foreign target and hostile variants answer alike`, async () => {
      const live = await load(name, true);
      const json = await load(name, false);
      const variants: Array<[KubeObject | null, KubeObject | null]> = [
        [sample, target],
        ...hostile(sample).map((v): [KubeObject, KubeObject | null] => [v, target]),
      ];
      if (dir === "forward")
        variants.push(
          [null, { ...sample, metadata: { ...sample.metadata, labels: s.ownedLabels } }],
          [sample, { ...sample, metadata: { name: sample.metadata!.name } }],
        );
      for (const [src, tgt] of variants) expect(answer(live, dir, src, tgt)).toEqual(answer(json, dir, src, tgt));
      // Odd objects are the object's problem: neither wire's plugin was quarantined.
      expect([live.state, json.state]).toEqual(["ready", "ready"]);
      expect(live.stats().calls).toBeGreaterThanOrEqual(variants.length - 2);
    });
  }

  test("an own __proto__ member is data, not the object's prototype: the skip annotation it holds is not inherited", async () => {
    const p = await load("configmaps", true);
    const obj = JSON.parse(
      JSON.stringify(s.configMap).replace(
        '"metadata":{',
        '"metadata":{"__proto__":{"annotations":{"liqo.io/skip-reflection":"true"}},',
      ),
    );
    expect(answer(p, "forward", obj, null)).toMatchObject({ decision: "apply" });
  });
});
