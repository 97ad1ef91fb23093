import { describe, expect, test } from "bun:test";
import { createRegistry, parsePrometheusText, renderPrometheusText, type MetricFamily } from "./index.ts";

describe("text exposition", () => {
  test("writes HELP, TYPE and samples with escaped help and label values", async () => {
    const r = createRegistry();
    r.gauge({ name: "liqo_odd", help: 'back\\slash and\nnewline "quotes" stay', labelNames: ["v"] }).set(
      { v: 'a"b\\c\nd' },
      1.5,
    );
    expect(await r.expose()).toBe(
      '# HELP liqo_odd back\\\\slash and\\nnewline "quotes" stay\n' +
        "# TYPE liqo_odd gauge\n" +
        'liqo_odd{v="a\\"b\\\\c\\nd"} 1.5\n',
    );
  });

  test("writes cumulative histogram buckets with le last and +Inf", async () => {
    const r = createRegistry();
    const h = r.histogram({
      name: "liqo_apply_seconds",
      help: "Apply latency.",
      labelNames: ["kind"],
      buckets: [0.5, 2],
    });
    h.observe({ kind: "Pod" }, 0.1);
    h.observe({ kind: "Pod" }, 1);
    h.observe({ kind: "Pod" }, 10);
    expect(await r.expose()).toBe(
      [
        "# HELP liqo_apply_seconds Apply latency.",
        "# TYPE liqo_apply_seconds histogram",
        'liqo_apply_seconds_bucket{kind="Pod",le="0.5"} 1',
        'liqo_apply_seconds_bucket{kind="Pod",le="2"} 2',
        'liqo_apply_seconds_bucket{kind="Pod",le="+Inf"} 3',
        'liqo_apply_seconds_sum{kind="Pod"} 11.1',
        'liqo_apply_seconds_count{kind="Pod"} 3',
        "",
      ].join("\n"),
    );
  });

  test("special values use Prometheus spellings", async () => {
    const r = createRegistry();
    const g = r.gauge({ name: "liqo_g", help: "h", labelNames: ["k"] });
    g.set({ k: "nan" }, NaN);
    g.set({ k: "inf" }, Infinity);
    g.set({ k: "ninf" }, -Infinity);
    const text = await r.expose();
    expect(text).toContain('liqo_g{k="nan"} NaN\n');
    expect(text).toContain('liqo_g{k="inf"} +Inf\n');
    expect(text).toContain('liqo_g{k="ninf"} -Inf\n');
  });

  test("a full registry round-trips through the parser unchanged", async () => {
    const r = createRegistry();
    r.counter({
      name: "liqo_reflections_total",
      help: "Reflected objects.\nBy kind.",
      labelNames: ["kind", "outcome"],
    }).inc({ kind: 'Con"fig\\Map', outcome: "ok" }, 4);
    r.gauge({ name: "liqo_peerings", help: "Active peerings." }).set(2);
    const h = r.histogram({
      name: "liqo_queue_wait_seconds",
      help: "Wait.",
      labelNames: ["reflector"],
      buckets: [0.01, 0.1, 1],
    });
    for (const v of [0.001, 0.05, 0.05, 0.5, 5]) h.observe({ reflector: "pods" }, v);
    h.observe({ reflector: "svc" }, 0.2);
    r.callbackGauge({
      name: "liqo_special",
      help: "Special.",
      labelNames: ["v"],
      collect: () => [
        { labels: { v: "nan" }, value: NaN },
        { labels: { v: "inf" }, value: -Infinity },
      ],
    });
    const families = await r.collect();
    const parsed = parsePrometheusText(await r.expose());
    expect(parsed).toEqual(families);
    expect(parsed.map((f) => f.name)).toEqual([
      "liqo_peerings",
      "liqo_queue_wait_seconds",
      "liqo_reflections_total",
      "liqo_special",
    ]);
    expect(parsed[2]!.samples[0]!.labels.kind).toBe('Con"fig\\Map');
    expect(parsed[2]!.help).toBe("Reflected objects.\nBy kind.");
  });

  test("timestamps survive the round trip", () => {
    const families: MetricFamily[] = [
      {
        name: "liqo_t",
        help: "h",
        type: "untyped",
        samples: [{ name: "liqo_t", labels: {}, value: -0.5, timestampMs: 1700000000123 }],
      },
    ];
    const text = renderPrometheusText(families);
    expect(text).toBe("# HELP liqo_t h\n# TYPE liqo_t untyped\nliqo_t -0.5 1700000000123\n");
    expect(parsePrometheusText(text)).toEqual(families);
  });
});
