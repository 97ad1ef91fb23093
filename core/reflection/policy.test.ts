import { describe, expect, test } from "bun:test";
import type { KubeObject } from "../kube/resources.ts";
import {
  admits,
  DEFAULT_POLICY,
  formatReflectionPolicy,
  parseReflectionPolicy,
  ReflectionPolicyError,
} from "./policy.ts";
import { policyFromConfigMap } from "./policy-watch.ts";

const obj = (annotations?: Record<string, string>): KubeObject => ({
  metadata: { name: "x", namespace: "ns", annotations },
});

describe("parseReflectionPolicy", () => {
  test("defaults: every kind all (Liqo's DenyList)", () => {
    expect(parseReflectionPolicy("")).toEqual(DEFAULT_POLICY);
    expect(formatReflectionPolicy(DEFAULT_POLICY)).toBe(
      "configmaps=all,secrets=all,services=all,endpointslices=all,ingresses=all,events=all",
    );
  });
  test("flag text over the defaults; Liqo 1.x's names for kinds and modes are accepted", () => {
    const p = parseReflectionPolicy("secrets=opt-in, configmap=AllowList,events=none,service=DenyList");
    expect(p).toEqual({ ...DEFAULT_POLICY, secrets: "opt-in", configmaps: "opt-in", events: "none", services: "all" });
  });
  test("a map (chart values, the ConfigMap)", () =>
    expect(parseReflectionPolicy({ Ingress: "none" }).ingresses).toBe("none"));
  test("an unknown kind is refused, naming it and the kinds that exist", () => {
    expect(() => parseReflectionPolicy("pods=none")).toThrow(ReflectionPolicyError);
    expect(() => parseReflectionPolicy("deployments=none", "--reflection-policy")).toThrow(
      '--reflection-policy: unknown kind "deployments"; reflection policies exist for configmaps, secrets, services, endpointslices, ingresses, events',
    );
  });
  test("an unknown mode is refused, naming the modes", () =>
    expect(() => parseReflectionPolicy({ secrets: "some" })).toThrow(
      'reflection policy: secrets="some" is not a reflection policy; use all, opt-in or none',
    ));
  test("text that is not kind=mode is refused", () =>
    expect(() => parseReflectionPolicy("secrets")).toThrow('"secrets" is not kind=policy'));
  test("a non-string value (a YAML number or list) is refused", () =>
    expect(() => parseReflectionPolicy({ secrets: 3 })).toThrow("secrets=3 is not a reflection policy"));
});

describe("admits", () => {
  const p = parseReflectionPolicy("configmaps=opt-in,secrets=none");
  test("all: every object (skip-reflection stays the reflectors' own business)", () => {
    expect(admits(p, "Service", obj())).toBe(true);
    expect(admits(p, "Service", obj({ "liqo.io/skip-reflection": "true" }))).toBe(true);
  });
  test("opt-in: only objects annotated liqo.io/allow-reflection (any value but false)", () => {
    expect(admits(p, "ConfigMap", obj())).toBe(false);
    expect(admits(p, "ConfigMap", obj({ "liqo.io/allow-reflection": "" }))).toBe(true);
    expect(admits(p, "ConfigMap", obj({ "liqo.io/allow-reflection": "true" }))).toBe(true);
    expect(admits(p, "ConfigMap", obj({ "liqo.io/allow-reflection": "false" }))).toBe(false);
  });
  test("none: nothing, annotated or not", () =>
    expect(admits(p, "Secret", obj({ "liqo.io/allow-reflection": "true" }))).toBe(false));
  test("events under all: not for an object annotated skip-reflection", () => {
    expect(admits(p, "Event", obj())).toBe(true);
    expect(admits(p, "Event", obj({ "liqo.io/skip-reflection": "true" }))).toBe(false);
  });
  test("kinds without a policy (pods, PVCs, a plugin's) are always admitted", () =>
    expect(admits(p, "Pod", obj())).toBe(true));
});

describe("policyFromConfigMap", () => {
  test("no ConfigMap: the defaults", () => expect(policyFromConfigMap(undefined, "liqo")).toEqual(DEFAULT_POLICY));
  test("a bad key names the ConfigMap", () =>
    expect(() =>
      policyFromConfigMap({ metadata: { name: "liqo-reflection-policy" }, data: { widgets: "all" } }, "liqo"),
    ).toThrow('ConfigMap liqo/liqo-reflection-policy: unknown kind "widgets"'));
});
