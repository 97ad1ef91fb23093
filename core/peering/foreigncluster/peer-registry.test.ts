import { describe, expect, test } from "bun:test";
import { createRegistry, parsePrometheusText } from "../../metrics/index.ts";
import { createEngineMetrics } from "../../reflection/engine/metrics.ts";
import { peerRegistry } from "./peer-registry.ts";

const declareLikeAnEngine = (r: ReturnType<typeof peerRegistry>, depth: number) => {
  const m = createEngineMetrics(r);
  r.callbackGauge({
    name: "liqo_reflection_queue_depth",
    help: "h",
    labelNames: ["reflector"] as const,
    collect: () => [{ labels: { reflector: "pods" }, value: depth }],
  });
  return m;
};

describe("peerRegistry", () => {
  test("two virtual kubelets declare the same metrics on one registry; each series carries its peer", async () => {
    const parent = createRegistry();
    expect(() => {
      createEngineMetrics(parent);
      createEngineMetrics(parent);
    }).toThrow("already registered"); // the bug this fixes
    const shared = createRegistry();
    const a = peerRegistry(shared, "aaa");
    const b = peerRegistry(shared, "bbb");
    const ma = declareLikeAnEngine(a, 3);
    const mb = declareLikeAnEngine(b, 5);
    ma.reconciles.inc({ reflector: "pods", outcome: "apply" });
    mb.reconciles.inc({ reflector: "pods", outcome: "apply" }, 2);
    ma.latency.observe({ reflector: "pods" }, 0.01);
    const text = await shared.expose();
    expect(text).toContain(
      'liqo_reflection_reconciles_total{reflector="pods",outcome="apply",remote_cluster_id="aaa"} 1',
    );
    expect(text).toContain(
      'liqo_reflection_reconciles_total{reflector="pods",outcome="apply",remote_cluster_id="bbb"} 2',
    );
    expect(text).toContain('liqo_reflection_queue_depth{reflector="pods",remote_cluster_id="aaa"} 3');
    expect(text).toContain('liqo_reflection_queue_depth{reflector="pods",remote_cluster_id="bbb"} 5');
    expect(text).toContain('liqo_reflection_reconcile_seconds_count{reflector="pods",remote_cluster_id="aaa"} 1');
    expect(() => parsePrometheusText(text)).not.toThrow();
    expect(ma.reconciles.get({ reflector: "pods", outcome: "apply" })).toBe(1);
  });

  test("closing a view drops its series and callbacks; the same peer can declare again (re-peering)", async () => {
    const shared = createRegistry();
    const a = peerRegistry(shared, "aaa");
    const b = peerRegistry(shared, "bbb");
    declareLikeAnEngine(a, 3).errors.inc({ reflector: "pods", kind: "api" });
    declareLikeAnEngine(b, 5).errors.inc({ reflector: "pods", kind: "api" });
    a.close();
    let text = await shared.expose();
    expect(text).not.toContain('remote_cluster_id="aaa"');
    expect(text).toContain('liqo_reflection_errors_total{reflector="pods",kind="api",remote_cluster_id="bbb"} 1');
    const again = peerRegistry(shared, "aaa");
    declareLikeAnEngine(again, 7);
    text = await shared.expose();
    expect(text).toContain('liqo_reflection_queue_depth{reflector="pods",remote_cluster_id="aaa"} 7');
  });

  test("reset on a view clears only that peer's series", async () => {
    const shared = createRegistry();
    const ca = peerRegistry(shared, "aaa").counter({ name: "liqo_x_total", help: "h" });
    const cb = peerRegistry(shared, "bbb").counter({ name: "liqo_x_total", help: "h" });
    ca.inc();
    cb.inc(4);
    ca.reset();
    expect(ca.get()).toBe(0);
    expect(cb.get()).toBe(4);
  });
});
