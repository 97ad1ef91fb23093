// finishPlan: the host's checks on a plugin's answer. Answers whose edits stay clear of
// apiVersion, kind and metadata skip the identity checks (the base copy guarantees them);
// every other answer is checked, and edits that could never be valid are refused.
import { describe, expect, test } from "bun:test";
import type { KubeObject, Resource } from "./abi.ts";
import { PluginError } from "./errors.ts";
import { finishPlan, planOfText, type CallFacts } from "./finish.ts";

const resource: Resource = { group: "", version: "v1", kind: "ConfigMap", direction: "forward", namespaced: true };
const ctx = {
  localClusterId: "home",
  remoteClusterId: "away",
  localNamespace: "a",
  remoteNamespace: "a-home",
  virtualNodeName: "liqo-away",
};
const source: KubeObject = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cm", namespace: "a", labels: { app: "x" } },
  data: { k: "v" },
};
const facts: CallFacts = {
  plugin: "test",
  direction: "forward",
  resource,
  source,
  target: null,
  ctx: ctx as CallFacts["ctx"],
};
/** The answer as the host gets it from a plugin: its text. */
const finishAnswer = (answer: unknown, f: CallFacts) => finishPlan(planOfText(JSON.stringify(answer)), f);
const finish = (edits: unknown[]) => finishAnswer({ decision: "apply", reason: "", edits }, facts);
const failure = (edits: unknown[]): PluginError => {
  try {
    finish(edits);
  } catch (err) {
    return err as PluginError;
  }
  throw new Error("expected the answer to be refused");
};

describe("finishAnswer", () => {
  test("edits outside metadata: the reflected copy carries the identity the base copy built", () => {
    const d = finish([["/data/k", "w"]]);
    expect(d.decision === "apply" && d.object.metadata).toEqual({
      name: "cm",
      namespace: "a-home",
      labels: { app: "x", "liqo.io/managed-by": "reflection", "liqo.io/origin-cluster-id": "home" },
    });
  });
  test("an edit that drops the ownership labels is a violation", () => {
    const e = failure([["/metadata/labels/liqo.io~1origin-cluster-id", "someone-else"]]);
    expect(e.code).toBe("violation");
    expect(e.message).toContain("liqo.io/origin-cluster-id=home");
  });
  test("an edit that moves the object to another namespace is a violation", () => {
    expect(failure([["/metadata/namespace", "kube-system"]]).code).toBe("violation");
  });
  test("an edit that changes the kind is a violation", () => {
    expect(failure([["/kind", "Secret"]]).code).toBe("violation");
  });
  test("edits of annotations and other labels skip the checks and keep the identity", () => {
    const d = finish([["/metadata/annotations/note", "x"], ["/metadata/labels/app"], ["/metadata/labels/tier", "web"]]);
    expect(d.decision === "apply" && d.object.metadata).toEqual({
      name: "cm",
      namespace: "a-home",
      labels: { tier: "web", "liqo.io/managed-by": "reflection", "liqo.io/origin-cluster-id": "home" },
      annotations: { note: "x" },
    });
  });
  test("replacing the labels or the metadata wholesale is checked", () => {
    expect(failure([["/metadata/labels", { app: "x" }]]).code).toBe("violation");
    expect(failure([["/metadata", { name: "cm" }]]).code).toBe("violation");
    expect(failure([["/metadata/labels/liqo.io~1managed-by"]]).code).toBe("violation");
    expect(failure([["/metadata/name", 5]]).code).toBe("invalid-output");
    expect(
      failure([
        ["/metadata/labels/app", "x"],
        ["/metadata/namespace", "elsewhere"],
      ]).code,
    ).toBe("violation");
  });
  test("an edit through __proto__ is refused as invalid output, naming the path", () => {
    const e = failure([["/metadata/labels/__proto__", { "liqo.io/managed-by": "reflection" }]]);
    expect(e.code).toBe("invalid-output");
    expect(e.message).toContain("/metadata/labels/__proto__");
    expect(failure([["/__proto__/polluted", 1]]).code).toBe("invalid-output");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
