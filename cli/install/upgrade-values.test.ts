import { describe, expect, test } from "bun:test";
import { givenFlags, upgradeValues, valuesDiff } from "./upgrade-values.ts";

// What `helm get values liqo` answers after `liqoctl install generic ... --set proxy.enabled=true`.
const current = {
  clusterName: "rome",
  clusterId: "1f0c",
  clusterLabels: { region: "north" },
  sharingPercentage: 30,
  apiServer: { url: "https://10.0.0.1:6443" },
  networking: { podCIDR: "10.200.0.0/16", serviceCIDR: "10.96.0.0/12", reservedSubnets: [] },
  controllerManager: { replicas: 1 },
  gateway: { replicas: 1, service: { type: "NodePort" } },
  auth: { service: { type: "NodePort" } },
  proxy: { enabled: true },
};
// What the same command line with other flags generates (the networks from the release).
const fresh = {
  ...current,
  clusterLabels: { zone: "b" },
  controllerManager: { replicas: 2 },
  gateway: { replicas: 2, service: { type: "NodePort" } },
  metrics: { enabled: true },
  proxy: undefined,
};

describe("liqoctl install on an installed release", () => {
  test("only the flags given change values; every other value, a former --set included, stays", () => {
    const out = upgradeValues(current, fresh, givenFlags({ enableMetrics: true }));
    expect(out).toEqual({ ...current, metrics: { enabled: true } });
    expect(current).not.toHaveProperty("metrics"); // the release's values are not modified in place
  });

  test("--enable-ha sets both replica counts; --enable-ha=false given sets them back to 1", () => {
    expect(upgradeValues(current, fresh, givenFlags({ enableHa: true }))).toMatchObject({
      controllerManager: { replicas: 2 },
      gateway: { replicas: 2, service: { type: "NodePort" } },
    });
    const back = upgradeValues(
      { ...current, controllerManager: { replicas: 2 } },
      { ...current, controllerManager: { replicas: 1 } },
      givenFlags({ enableHa: false }),
    );
    expect(back.controllerManager).toEqual({ replicas: 1 });
  });

  test("a map given replaces the release's map whole (--cluster-labels), as a first install would set it", () => {
    expect(upgradeValues(current, fresh, givenFlags({ clusterLabels: "zone=b" })).clusterLabels).toEqual({
      zone: "b",
    });
  });

  test("no flag given: the release's values, unchanged", () => {
    expect(givenFlags({})).toEqual([]);
    expect(upgradeValues(current, fresh, [])).toEqual(current);
  });
});

describe("the difference shown before applying", () => {
  test("each changed leaf, before → after; (unset) for a side without it; sorted", () => {
    const after = { ...current, metrics: { enabled: true }, clusterLabels: { zone: "b" } };
    expect(valuesDiff(current, after)).toEqual([
      'clusterLabels.region: "north" → (unset)',
      'clusterLabels.zone: (unset) → "b"',
      "metrics.enabled: (unset) → true",
    ]);
  });

  test("--set flags count as Helm reads them: a value equal to the release's is no change", () => {
    expect(valuesDiff(current, current, ["proxy.enabled=true", "gateway.replicas=1"])).toEqual([]);
    expect(valuesDiff(current, current, ["gateway.replicas=3", "debug=true"])).toEqual([
      "debug: (unset) → true",
      "gateway.replicas: 1 → 3",
    ]);
  });

  test("nothing changed: no lines", () => {
    expect(valuesDiff(current, structuredClone(current))).toEqual([]);
  });
});
