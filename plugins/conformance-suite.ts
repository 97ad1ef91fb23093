// The conformance kit's cases, runner-agnostic: `testReflectorPlugin` (conformance.ts) registers
// them as bun:test cases, `liqoctl plugin test <dir>` runs them and prints each result. Every case
// loads a fresh instance, so one failure cannot quarantine the next case. Failures are plain Errors
// whose message says what the plugin answered and what the rule is.
import {
  ANNOTATION_SKIP,
  apiVersionOf,
  type CacheLookup,
  type Decision,
  type KubeObject,
  LABEL_MANAGED_BY,
  LABEL_ORIGIN,
  MANAGED_BY_REFLECTION,
  type Manifest,
  type ReflectionContext,
  type Resource,
} from "../core/reflection/abi.ts";
import { PluginError } from "../core/reflection/errors.ts";
import { type LoadOptions, loadPlugin, type ReflectorPlugin, type Trust } from "../core/reflection/host.ts";

export interface ConformanceOptions {
  /** Realistic objects of the plugin's kinds; a bare object per declared kind is made otherwise. */
  samples?: KubeObject[];
  /** Extra context fields the plugin needs (storageClass, virtualNodeName...). */
  context?: Partial<ReflectionContext>;
  lookup?: CacheLookup;
  /** "builtin" (the default: main thread, live wire) or "dropin" (a worker, the JSON wire: how a peering runs yours). */
  trust?: Trust;
}

export interface ConformanceCase {
  name: string;
  run(): Promise<void>;
}

export interface ConformanceSuite {
  title: string;
  manifest?: Manifest;
  cases: ConformanceCase[];
}

const SERVER_FIELDS = ["uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences", "generation"];

const show = (v: unknown) => JSON.stringify(v);
function must(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}
const said = (d: Decision) => (d.decision === "apply" ? "apply" : `${d.decision} (${show(d.reason)})`);

/** The kit's cases for one plugin; a plugin that does not load yields one failing case saying why. */
export async function conformanceSuite(
  wasm: string | Uint8Array,
  options: ConformanceOptions = {},
): Promise<ConformanceSuite> {
  const bytes = typeof wasm === "string" ? await Bun.file(wasm).bytes() : wasm;
  const ctx: ReflectionContext = {
    localClusterId: "conformance-local",
    remoteClusterId: "conformance-remote",
    localNamespace: "ns-local",
    remoteNamespace: "ns-remote",
    virtualNodeName: "liqo-conformance-remote",
    virtualKubeletIp: "10.0.0.1",
    storageClass: "standard",
    ...options.context,
  };
  // A generous budget: the kit checks behaviour, and a cold worker on a busy machine is slow.
  // The decision memo is off: every call must reach the plugin (determinism is checked by calling twice).
  const load = (extra: LoadOptions = {}) =>
    loadPlugin(bytes, {
      trust: options.trust ?? "builtin",
      lookup: options.lookup,
      budgetMs: 5_000,
      memoEntries: 0,
      ...extra,
    });
  let manifest: Manifest;
  try {
    const probe = await load();
    manifest = probe.manifest;
    await probe.close();
  } catch (err) {
    const title = `reflector plugin conformance (${typeof wasm === "string" ? wasm : "bytes"})`;
    return {
      title,
      cases: [{ name: "loads, speaks ABI v1 and has a valid manifest", run: () => Promise.reject(err) }],
    };
  }

  const withPlugin = (fn: (p: ReflectorPlugin) => Promise<void>) => async () => {
    const p = await load();
    try {
      await fn(p);
    } finally {
      await p.close();
    }
  };
  const owned = (obj: KubeObject, origin: string, namespace?: string): KubeObject => ({
    ...obj,
    metadata: {
      ...obj.metadata,
      namespace,
      labels: { ...obj.metadata?.labels, [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION, [LABEL_ORIGIN]: origin },
    },
  });
  const foreign = (obj: KubeObject, namespace?: string): KubeObject => ({
    ...obj,
    metadata: { ...obj.metadata, namespace, labels: { app: "theirs" } },
  });
  const stillReady = (p: ReflectorPlugin) =>
    must(p.state === "ready", `the plugin was quarantined: ${p.quarantineReason}`);

  const cases: ConformanceCase[] = [];
  const add = (name: string, run: () => Promise<void>) => cases.push({ name, run });
  add("manifest: ABI v1, DNS-label name, at least one resource", async () => {
    must(manifest.abiVersion === 1, `abiVersion is ${manifest.abiVersion}, must be 1`);
    must(
      /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(manifest.name),
      `name ${show(manifest.name)} is not a DNS label ([a-z0-9-], ≤ 63)`,
    );
    must(manifest.resources.length > 0, "the manifest declares no resources");
  });

  for (const r of manifest.resources) {
    const namespaced = r.namespaced !== false;
    const sample = sampleFor(r, options.samples, namespaced ? ctx.localNamespace : undefined);
    const remoteNs = namespaced ? ctx.remoteNamespace : undefined;
    const localNs = namespaced ? ctx.localNamespace : undefined;
    const what = `${apiVersionOf(r)}/${r.kind}`;

    if (r.direction !== "backward") {
      add(
        `${what} forward: applies into the remote namespace with ownership labels and no server metadata`,
        withPlugin(async (p) => {
          const d = await p.forward(sample, null, ctx);
          stillReady(p);
          if (d.decision !== "apply") return must(d.reason !== "", `a ${d.decision} must give a reason`);
          const meta = d.object.metadata ?? {};
          must(
            meta.namespace === remoteNs,
            `the answer is in namespace ${show(meta.namespace)}, not the remote one ${show(remoteNs)}`,
          );
          must(
            meta.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_REFLECTION,
            `the answer lacks the label ${LABEL_MANAGED_BY}=${MANAGED_BY_REFLECTION}`,
          );
          must(
            meta.labels?.[LABEL_ORIGIN] === ctx.localClusterId,
            `the answer lacks the label ${LABEL_ORIGIN}=${ctx.localClusterId}`,
          );
          for (const f of SERVER_FIELDS) must(!(f in meta), `the answer carries server metadata (metadata.${f})`);
        }),
      );
      add(
        `${what} forward: deterministic`,
        withPlugin(async (p) => {
          const a = await p.forward(sample, null, ctx);
          const b = await p.forward(sample, null, ctx);
          must(Bun.deepEquals(a, b), `the same input answered differently:\n  ${show(a)}\n  ${show(b)}`);
          // What the engine runs: the host's decision memo answers the second call; it must agree.
          const memo = await load({ memoEntries: 1024 });
          try {
            await memo.forward(sample, null, ctx);
            const again = await memo.forward(sample, null, ctx);
            must(
              Bun.deepEquals(again, a),
              `the host's remembered answer differs from a fresh one:\n  ${show(again)}\n  ${show(a)}`,
            );
            must(
              memo.stats().memoHits === 1,
              `expected the memo to answer once, it answered ${memo.stats().memoHits} times`,
            );
          } finally {
            await memo.close();
          }
        }),
      );
      add(
        `${what} forward: ${ANNOTATION_SKIP} removes the remote copy`,
        withPlugin(async (p) => {
          const skipped = {
            ...sample,
            metadata: {
              ...sample.metadata,
              annotations: { ...sample.metadata?.annotations, [ANNOTATION_SKIP]: "true" },
            },
          };
          const d = await p.forward(skipped, owned(sample, ctx.localClusterId, remoteNs), ctx);
          must(
            d.decision === "delete",
            `a source annotated ${ANNOTATION_SKIP} answered ${said(d)}, must be delete (forwardGuards does it)`,
          );
        }),
      );
      add(
        `${what} forward: a remote object it does not own is left alone (conflict)`,
        withPlugin(async (p) => {
          const d = await p.forward(sample, foreign(sample, remoteNs), ctx);
          must(
            d.decision === "skip" && d.reason.includes("conflict"),
            `over a foreign target it answered ${said(d)}, must be skip with "conflict"`,
          );
          const gone = await p.forward(null, foreign(sample, remoteNs), ctx);
          must(gone.decision === "skip", `a deleted source over a foreign target answered ${said(gone)}, must be skip`);
        }),
      );
      add(
        `${what} forward: an owned remote copy is updated, and deleted with the local object`,
        withPlugin(async (p) => {
          const remote = owned(sample, ctx.localClusterId, remoteNs);
          const d = await p.forward(sample, remote, ctx);
          must(
            d.decision === "apply" || d.decision === "skip",
            `over its own copy it answered ${said(d)}, must be apply or skip`,
          );
          const gone = await p.forward(null, remote, ctx);
          must(gone.decision === "delete", `a deleted source answered ${said(gone)}, must be delete`);
        }),
      );
      add(
        `${what} forward: malformed input yields an error or a decision, never a crash`,
        withPlugin(async (p) => {
          const bad = {
            apiVersion: sample.apiVersion,
            kind: sample.kind,
            metadata: {
              name: "bad",
              namespace: sample.metadata?.namespace,
              annotations: "oops" as never,
              labels: [] as never,
            },
            spec: "garbage",
            data: 7,
            endpoints: "x",
            status: null,
          };
          const outcome = await p.forward(bad as KubeObject, null, ctx).catch((e: unknown) => e);
          if (outcome instanceof PluginError)
            must(
              outcome.code === "invalid-input",
              `malformed input made it fail with ${outcome.code}: ${outcome.message}`,
            );
          else if (outcome instanceof Error) throw outcome;
          stillReady(p);
          const wrongKind = await p
            .forward({ apiVersion: "v0", kind: "NoSuchKind", metadata: { name: "x" } }, null, ctx)
            .catch((e: unknown) => e);
          must(
            wrongKind instanceof PluginError && wrongKind.code === "invalid-input",
            `an undeclared kind was not refused as invalid input: ${show(wrongKind)}`,
          );
        }),
      );
    }

    if (r.direction !== "forward") {
      const remote = { ...sample, metadata: { ...sample.metadata, namespace: remoteNs } };
      add(
        `${what} backward: stays in the local namespace, deterministic`,
        withPlugin(async (p) => {
          const local = r.kind === "Pod" ? sample : null;
          const a = await p.backward(remote, local, ctx);
          const b = await p.backward(remote, local, ctx);
          must(Bun.deepEquals(a, b), `the same input answered differently:\n  ${show(a)}\n  ${show(b)}`);
          if (a.decision === "apply") {
            must(
              a.object.metadata?.namespace === localNs,
              `the answer is in namespace ${show(a.object.metadata?.namespace)}, not the local one ${show(localNs)}`,
            );
          } else must(a.reason !== "", `a ${a.decision} must give a reason`);
          stillReady(p);
        }),
      );
      if (r.kind !== "Pod") {
        add(
          `${what} backward: a local object it does not own is left alone (conflict)`,
          withPlugin(async (p) => {
            const d = await p.backward(remote, foreign(sample, localNs), ctx);
            must(
              d.decision === "skip" && d.reason.includes("conflict"),
              `over a foreign local object it answered ${said(d)}, must be skip with "conflict"`,
            );
          }),
        );
      }
    }
  }
  return { title: `reflector plugin conformance: ${manifest.name} ${manifest.version}`, manifest, cases };
}

export interface CaseResult {
  name: string;
  ok: boolean;
  error?: string;
}

/** Runs every case in order (outside bun:test), never stopping at a failure. */
export async function runConformance(
  wasm: string | Uint8Array,
  options: ConformanceOptions = {},
): Promise<{ title: string; results: CaseResult[] }> {
  const suite = await conformanceSuite(wasm, options);
  const results: CaseResult[] = [];
  for (const c of suite.cases) {
    try {
      await c.run();
      results.push({ name: c.name, ok: true });
    } catch (err) {
      results.push({ name: c.name, ok: false, error: (err as Error)?.message ?? String(err) });
    }
  }
  return { title: suite.title, results };
}

function sampleFor(r: Resource, samples: KubeObject[] | undefined, namespace: string | undefined): KubeObject {
  const given = samples?.find((s) => s.kind === r.kind && s.apiVersion === apiVersionOf(r));
  const base = given ?? {
    apiVersion: apiVersionOf(r),
    kind: r.kind,
    metadata: { name: "conformance-sample" },
    spec: {},
  };
  return { ...base, metadata: { ...base.metadata, namespace } };
}
