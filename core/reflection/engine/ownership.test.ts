import { describe, expect, test } from "bun:test";
import { convergence, isEqual, outermostFirstLast } from "./ownership.ts";

const FM = "liqo-reflection";
const applied = (fieldsV1: object, subresource?: string) => ({
  manager: FM,
  operation: "Apply",
  fieldsType: "FieldsV1",
  fieldsV1,
  ...(subresource ? { subresource } : {}),
});
const updated = (manager: string, fieldsV1: object, subresource?: string) => ({
  manager,
  operation: "Update",
  fieldsType: "FieldsV1",
  fieldsV1,
  ...(subresource ? { subresource } : {}),
});

const cmFields = (keys: string[], labels: string[]) => ({
  "f:data": Object.fromEntries(keys.map((k) => [`f:${k}`, {}])),
  "f:metadata": { "f:labels": Object.fromEntries(labels.map((k) => [`f:${k}`, {}])) },
});
const cm = (data: Record<string, string>, labels: Record<string, string>, managedFields: object[]) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cm1", namespace: "ns", uid: "u", resourceVersion: "7", labels, managedFields },
  data,
});
const answer = (data: Record<string, string>, labels: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cm1", namespace: "ns", labels },
  data,
});

describe("convergence", () => {
  test("an object that equals the answer needs nothing", () => {
    const c = convergence(
      answer({ a: "1" }, { team: "x" }),
      cm({ a: "1" }, { team: "x" }, [applied(cmFields(["a"], ["team"]))]),
      FM,
    );
    expect(c).toEqual({ apply: false, removals: [] });
    expect(isEqual(c)).toBe(true);
  });

  test("a data key we applied and the answer dropped: apply (the server removes it)", () => {
    const c = convergence(answer({ a: "1" }, {}), cm({ a: "1", b: "2" }, {}, [applied(cmFields(["a", "b"], []))]), FM);
    expect(c.apply).toBe(true);
    expect(c.removals).toEqual([]);
  });

  test("a label we applied and the answer dropped: apply", () => {
    expect(
      convergence(answer({ a: "1" }, {}), cm({ a: "1" }, { team: "x" }, [applied(cmFields(["a"], ["team"]))]), FM)
        .apply,
    ).toBe(true);
  });

  test("fields our manager set by create/update (not apply) and the answer dropped: removed by patch", () => {
    const c = convergence(
      answer({ a: "1" }, {}),
      cm({ a: "1", b: "2" }, { team: "x" }, [updated(FM, cmFields(["a", "b"], ["team"]))]),
      FM,
    );
    expect(c.apply).toBe(false);
    expect(c.removals.sort()).toEqual(["/data/b", "/metadata/labels/team"]);
  });

  test("a key and a label another manager added by hand: removed by patch; what we own stays", () => {
    const c = convergence(
      answer({ a: "1" }, { team: "x" }),
      cm({ a: "1", c: "3" }, { team: "x", "hand/made": "y" }, [
        applied(cmFields(["a"], ["team"])),
        updated("kubectl-edit", cmFields(["c"], ["hand/made"])),
      ]),
      FM,
    );
    expect(c.apply).toBe(false);
    expect(c.removals.sort()).toEqual(["/data/c", "/metadata/labels/hand~1made"]);
  });

  test("a value another manager changed: apply (forced, it takes the field back)", () => {
    const c = convergence(
      answer({ a: "1" }, {}),
      cm({ a: "hacked" }, {}, [applied(cmFields([], [])), updated("kubectl-edit", cmFields(["a"], []))]),
      FM,
    );
    expect(c.apply).toBe(true);
    expect(c.removals).toEqual([]);
  });

  test("an equal value another manager also owns is no difference", () => {
    const c = convergence(
      answer({ a: "1" }, {}),
      cm({ a: "1" }, {}, [applied(cmFields(["a"], [])), updated("other", cmFields(["a"], []))]),
      FM,
    );
    expect(isEqual(c)).toBe(true);
  });

  test("a key missing from the object: apply", () => {
    expect(
      convergence(answer({ a: "1", b: "2" }, {}), cm({ a: "1" }, {}, [applied(cmFields(["a"], []))]), FM).apply,
    ).toBe(true);
  });

  test("fields nobody owns are the server's (defaults): no difference", () => {
    const svcAnswer = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
      spec: { selector: { app: "a" }, ports: [{ port: 80 }] },
    };
    const svc = {
      ...svcAnswer,
      metadata: {
        name: "s",
        managedFields: [
          applied({
            "f:spec": { "f:selector": {}, "f:ports": { 'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {} } } },
          }),
        ],
      },
      spec: {
        selector: { app: "a" },
        ports: [{ port: 80, protocol: "TCP", targetPort: 80 }],
        clusterIP: "10.0.0.1",
        sessionAffinity: "None",
      },
    };
    expect(isEqual(convergence(svcAnswer, svc, FM))).toBe(true);
  });

  const svcOwned = {
    "f:spec": {
      "f:selector": {},
      "f:ports": {
        'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {} },
        'k:{"port":81,"protocol":"TCP"}': { ".": {}, "f:port": {} },
      },
    },
  };
  const svcObj = (spec: object, managedFields: object[]) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "s", managedFields },
    spec,
  });

  test("a selector the answer dropped, a port it dropped: apply", () => {
    const a = { apiVersion: "v1", kind: "Service", metadata: { name: "s" }, spec: { ports: [{ port: 80 }] } };
    const o = svcObj(
      {
        selector: { app: "a" },
        ports: [
          { port: 80, protocol: "TCP" },
          { port: 81, protocol: "TCP" },
        ],
      },
      [applied(svcOwned)],
    );
    expect(convergence(a, o, FM).apply).toBe(true);
    const onlyPort = svcObj(
      {
        ports: [
          { port: 80, protocol: "TCP" },
          { port: 81, protocol: "TCP" },
        ],
      },
      [applied({ "f:spec": { "f:ports": svcOwned["f:spec"]["f:ports"] } })],
    );
    expect(convergence(a, onlyPort, FM).apply).toBe(true);
  });

  test("a port another manager added: removed whole, found by its key, later items first", () => {
    const a = { apiVersion: "v1", kind: "Service", metadata: { name: "s" }, spec: { ports: [{ port: 81 }] } };
    const o = svcObj(
      {
        ports: [
          { port: 80, protocol: "TCP" },
          { port: 81, protocol: "TCP" },
          { port: 82, protocol: "TCP" },
        ],
      },
      [
        applied({ "f:spec": { "f:ports": { 'k:{"port":81,"protocol":"TCP"}': { ".": {}, "f:port": {} } } } }),
        updated("kubectl-edit", {
          "f:spec": {
            "f:ports": {
              'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {}, "f:protocol": {} },
              'k:{"port":82,"protocol":"TCP"}': { ".": {}, "f:port": {}, "f:protocol": {} },
            },
          },
        }),
      ],
    );
    // (An apply too: lists are compared by position, so the extra items already count as a difference.)
    expect(convergence(a, o, FM).removals).toEqual(["/spec/ports/2", "/spec/ports/0"]);
  });

  test("an atomic selector another manager extended: apply takes it back (containment is not equality)", () => {
    const a = { apiVersion: "v1", kind: "Service", metadata: { name: "s" }, spec: { selector: { app: "a" } } };
    const o = svcObj({ selector: { app: "a", extra: "y" } }, [
      updated("kubectl-edit", { "f:spec": { "f:selector": {} } }),
    ]);
    expect(convergence(a, o, FM).apply).toBe(true);
  });

  test("the destination's control plane keeps its fields (a bound PVC)", () => {
    const a = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "p" },
      spec: { storageClassName: "standard" },
    };
    const o = {
      ...a,
      metadata: {
        name: "p",
        annotations: { "pv.kubernetes.io/bind-completed": "yes" },
        managedFields: [
          applied({ "f:spec": { "f:storageClassName": {} } }),
          updated("kube-controller-manager", {
            "f:metadata": { "f:annotations": { ".": {}, "f:pv.kubernetes.io/bind-completed": {} } },
            "f:spec": { "f:volumeName": {} },
          }),
          updated("kube-controller-manager", { "f:status": { "f:phase": {} } }, "status"),
        ],
      },
      spec: { storageClassName: "standard", volumeName: "pv-1" },
      status: { phase: "Bound" },
    };
    expect(isEqual(convergence(a, o, FM))).toBe(true);
  });

  test("status writes: a status field we applied and the answer dropped; other status writers ignored", () => {
    const a = { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, status: { phase: "Running" } };
    const o = (status: object) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "p",
        managedFields: [
          applied({ "f:status": { "f:phase": {}, "f:podIP": {} } }, "status"),
          updated("someone", { "f:status": { "f:reason": {} } }, "status"),
          updated("someone", { "f:spec": { "f:x": {} } }),
        ],
      },
      spec: { x: 1 },
      status,
    });
    expect(convergence(a, o({ phase: "Running", podIP: "10.0.0.1", reason: "r" }), FM, "status")).toEqual({
      apply: true,
      removals: [],
    });
    expect(isEqual(convergence(a, o({ phase: "Running", reason: "r" }), FM, "status"))).toBe(true);
  });

  test("fields already gone from the object are not removed again", () => {
    const c = convergence(
      answer({ a: "1" }, {}),
      cm({ a: "1" }, {}, [applied(cmFields(["a"], [])), updated("kubectl-edit", cmFields(["c"], ["gone"]))]),
      FM,
    );
    expect(isEqual(c)).toBe(true);
  });
});

test("outermostFirstLast: inner pointers of removed ones dropped, later list items first", () => {
  expect(
    outermostFirstLast([
      "/spec/ports/0",
      "/spec/ports/10",
      "/spec/ports/2/name",
      "/spec/ports/2",
      "/data/a",
      "/spec/ports/10/x",
    ]),
  ).toEqual(["/spec/ports/10", "/spec/ports/2", "/spec/ports/0", "/data/a"]);
});

describe("service continuity's marks", () => {
  test("its annotations on a reflected EndpointSlice are not taken away; its endpoints are", () => {
    const a = {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "s" },
      endpoints: [{ addresses: ["10.1.0.5"], conditions: { ready: true } }],
    };
    const o = {
      ...a,
      metadata: {
        name: "s",
        annotations: { "liqo.io/unreachable-since": "2026-11-28T17:00:00.000Z" },
        managedFields: [
          applied({}),
          updated("liqo-service-continuity", {
            "f:metadata": { "f:annotations": { ".": {}, "f:liqo.io/unreachable-since": {} } },
            "f:endpoints": {},
          }),
        ],
      },
      endpoints: [{ addresses: ["10.1.0.5"], conditions: { ready: false } }],
    };
    const c = convergence(a, o, FM);
    expect(c).toEqual({ apply: true, removals: [] });
  });
});
