import { describe, expect, test } from "bun:test";
import { createLogger } from "../log.ts";
import { createRegistry, MetricDefinitionError } from "./index.ts";

describe("declaration", () => {
  const bad: [string, () => void, RegExp][] = [
    [
      "metric name with a dash",
      () => createRegistry().gauge({ name: "liqo-bad", help: "h" }),
      /invalid metric name "liqo-bad"/,
    ],
    [
      "metric name starting with a digit",
      () => createRegistry().gauge({ name: "1liqo", help: "h" }),
      /invalid metric name/,
    ],
    ["empty metric name", () => createRegistry().gauge({ name: "", help: "h" }), /invalid metric name ""/],
    [
      "label name with a dot",
      () => createRegistry().gauge({ name: "liqo_x", help: "h", labelNames: ["a.b"] }),
      /invalid label name "a.b"/,
    ],
    [
      "reserved __ label",
      () => createRegistry().gauge({ name: "liqo_x", help: "h", labelNames: ["__x"] }),
      /not start with "__"/,
    ],
    [
      "duplicate label",
      () => createRegistry().gauge({ name: "liqo_x", help: "h", labelNames: ["a", "a"] }),
      /declared twice/,
    ],
    [
      "le on a histogram",
      () => createRegistry().histogram({ name: "liqo_h", help: "h", labelNames: ["le"] }),
      /reserved/,
    ],
    [
      "counter without _total",
      () => createRegistry().counter({ name: "liqo_events", help: "h" }),
      /must end in "_total"/,
    ],
    ["missing help", () => createRegistry().counter({ name: "liqo_events_total", help: " " }), /help text required/],
    [
      "unsorted buckets",
      () => createRegistry().histogram({ name: "liqo_h", help: "h", buckets: [1, 0.5] }),
      /strictly increasing/,
    ],
    [
      "infinite bucket",
      () => createRegistry().histogram({ name: "liqo_h", help: "h", buckets: [1, Infinity] }),
      /finite/,
    ],
  ];
  for (const [what, declare, message] of bad) {
    test(`rejects ${what}`, () => {
      expect(declare).toThrow(MetricDefinitionError);
      expect(declare).toThrow(message);
    });
  }

  test("rejects a second metric with the same name", () => {
    const r = createRegistry();
    r.gauge({ name: "liqo_x", help: "h" });
    expect(() => r.counter({ name: "liqo_x", help: "h" } as never)).toThrow(/liqo_x/);
    expect(() => r.gauge({ name: "liqo_x", help: "h" })).toThrow("metric liqo_x is already registered");
  });

  test("rejects a metric whose samples would collide with a histogram's", () => {
    const r = createRegistry();
    r.histogram({ name: "liqo_apply_seconds", help: "h" });
    expect(() => r.gauge({ name: "liqo_apply_seconds_count", help: "h" })).toThrow(/liqo_apply_seconds already writes/);
  });

  test("unregister frees every sample name", () => {
    const r = createRegistry();
    r.histogram({ name: "liqo_h", help: "h" });
    expect(r.unregister("liqo_h")).toBe(true);
    expect(r.has("liqo_h")).toBe(false);
    r.gauge({ name: "liqo_h_sum", help: "h" });
    expect(r.unregister("liqo_h")).toBe(false);
  });
});

describe("counters and gauges", () => {
  test("counter adds per label set and refuses to go down", () => {
    const r = createRegistry();
    const c = r.counter({ name: "liqo_applies_total", help: "h", labelNames: ["kind", "outcome"] });
    c.inc({ kind: "Pod", outcome: "ok" });
    c.inc({ kind: "Pod", outcome: "ok" }, 2);
    c.with({ kind: "Service", outcome: "error" }).inc();
    expect(c.get({ kind: "Pod", outcome: "ok" })).toBe(3);
    expect(c.get({ kind: "Service", outcome: "error" })).toBe(1);
    expect(c.get({ kind: "Secret", outcome: "ok" })).toBe(0);
    expect(() => c.inc({ kind: "Pod", outcome: "ok" }, -1)).toThrow(RangeError);
    expect(() => c.inc({ kind: "Pod", outcome: "ok" }, NaN)).toThrow(RangeError);
  });

  test("label sets must match the declaration exactly", () => {
    const c = createRegistry().counter({ name: "liqo_x_total", help: "h", labelNames: ["a"] });
    expect(() => c.inc({} as never)).toThrow('label "a" must be a string or number, got nothing');
    expect(() => c.inc({ a: "1", b: "2" } as never)).toThrow("undeclared labels: b");
    expect(() => c.inc()).toThrow("labels required: a");
    const plain = createRegistry().counter({ name: "liqo_y_total", help: "h" });
    expect(() => plain.inc({ a: "1" } as never)).toThrow("declared without labels");
  });

  test("gauge sets, adds and subtracts; remove drops a series", () => {
    const r = createRegistry();
    const g = r.gauge({ name: "liqo_queue_depth", help: "h", labelNames: ["reflector"] });
    g.set({ reflector: "pods" }, 5);
    g.inc({ reflector: "pods" }, 2);
    g.dec({ reflector: "pods" });
    expect(g.get({ reflector: "pods" })).toBe(6);
    expect(g.remove({ reflector: "pods" })).toBe(true);
    expect(g.get({ reflector: "pods" })).toBe(0);
    expect(() => g.set({ reflector: "pods" } as never)).toThrow("set() needs a value");
  });

  test("an unlabelled metric is exported at zero before its first update", async () => {
    const r = createRegistry();
    r.counter({ name: "liqo_restarts_total", help: "h" });
    expect(await r.collect()).toEqual([
      {
        name: "liqo_restarts_total",
        help: "h",
        type: "counter",
        samples: [{ name: "liqo_restarts_total", labels: {}, value: 0 }],
      },
    ]);
  });
});

describe("histograms", () => {
  test("buckets are cumulative with +Inf, _sum and _count", async () => {
    const r = createRegistry();
    const h = r.histogram({ name: "liqo_apply_seconds", help: "h", buckets: [0.1, 1] });
    for (const v of [0.05, 0.1, 0.5, 3]) h.observe(v);
    const [family] = await r.collect();
    expect(family!.samples.map((s) => [s.name, s.labels.le, s.value])).toEqual([
      ["liqo_apply_seconds_bucket", "0.1", 2],
      ["liqo_apply_seconds_bucket", "1", 3],
      ["liqo_apply_seconds_bucket", "+Inf", 4],
      ["liqo_apply_seconds_sum", undefined, 3.65],
      ["liqo_apply_seconds_count", undefined, 4],
    ]);
  });

  test("startTimer observes elapsed seconds from the injected clock", () => {
    let now = 1000;
    const h = createRegistry().histogram({
      name: "liqo_t",
      help: "h",
      labelNames: ["op"],
      buckets: [1],
      now: () => now,
    });
    const stop = h.startTimer({ op: "apply" });
    now += 250;
    expect(stop()).toBe(0.25);
    expect(() => h.observe({ op: "apply" }, NaN)).toThrow("observed value must be a number");
  });
});

describe("callback metrics and scrape isolation", () => {
  test("callbacks are read at scrape, labelled or not, sync or async", async () => {
    const r = createRegistry();
    let depth = 3;
    r.callbackGauge({ name: "liqo_depth", help: "h", collect: () => depth });
    r.callbackGauge({
      name: "liqo_cache_objects",
      help: "h",
      labelNames: ["cluster"],
      collect: async () => [{ labels: { cluster: "a" }, value: 7 }],
    });
    depth = 4;
    const families = await r.collect();
    expect(families.map((f) => [f.name, f.samples.map((s) => [s.labels, s.value])])).toEqual([
      ["liqo_cache_objects", [[{ cluster: "a" }, 7]]],
      ["liqo_depth", [[{}, 4]]],
    ]);
  });

  test("a throwing, invalid or hung callback drops only its own family and is logged", async () => {
    const lines: string[] = [];
    const r = createRegistry({ collectTimeoutMs: 20, logger: createLogger({}, { write: (l) => lines.push(l) }) });
    r.gauge({ name: "liqo_fine", help: "h" }).set(1);
    r.callbackGauge({
      name: "liqo_throws",
      help: "h",
      collect: () => {
        throw new Error("boom");
      },
    });
    r.callbackGauge({ name: "liqo_hangs", help: "h", collect: () => new Promise<number>(() => {}) });
    r.callbackCounter({ name: "liqo_neg_total", help: "h", collect: () => -1 });
    r.callbackGauge({ name: "liqo_unlabelled_answer", help: "h", labelNames: ["a"], collect: () => 1 });
    const families = await r.collect();
    expect(families.map((f) => f.name)).toEqual(["liqo_fine"]);
    const failed = lines.map((l) => JSON.parse(l)).map((rec) => [rec.metric, rec.err.message]);
    expect(failed).toContainEqual(["liqo_throws", "boom"]);
    expect(failed).toContainEqual(["liqo_hangs", "collecting liqo_hangs did not finish within 20ms"]);
    expect(failed).toContainEqual(["liqo_neg_total", "counter liqo_neg_total: callback returned -1, must be >= 0"]);
    expect(failed).toHaveLength(4);
  });
});
