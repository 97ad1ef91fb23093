import { describe, expect, test } from "bun:test";
import type { KubeObject } from "../kube/resources.ts";
import {
  admits,
  createPolicyJudge,
  DEFAULT_POLICY,
  followersOf,
  formatReflectionPolicy,
  parsePolicyEntries,
  parseReflectionPolicy,
  ReflectionPolicyError,
} from "./policy.ts";
import { overrideOfNamespace, policyFromConfigMap } from "./policy-watch.ts";

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

const labelled = (labels: Record<string, string>, namespace = "ns", annotations?: Record<string, string>) =>
  ({ metadata: { name: "x", namespace, labels, annotations } }) as KubeObject;

describe("selector(...) mode", () => {
  test("parsed from flag text, commas inside the parentheses belong to the selector", () => {
    const p = parseReflectionPolicy("secrets=selector(app=web, tier in (a,b)),configmaps=none");
    expect(p.secrets).toBe("selector(app=web, tier in (a,b))");
    expect(p.configmaps).toBe("none");
    expect(formatReflectionPolicy(p)).toContain("secrets=selector(app=web, tier in (a,b)),services=all");
  });
  test("from a map (chart values, the ConfigMap)", () =>
    expect(parseReflectionPolicy({ services: "selector(!internal)" }).services).toBe("selector(!internal)"));
  test("admits only objects whose labels match", () => {
    const p = parseReflectionPolicy("secrets=selector(app=web,tier in (a,b))");
    expect(admits(p, "Secret", labelled({ app: "web", tier: "a" }))).toBe(true);
    expect(admits(p, "Secret", labelled({ app: "web", tier: "c" }))).toBe(false);
    expect(admits(p, "Secret", labelled({ app: "web" }))).toBe(false);
    expect(admits(p, "Secret", labelled({}))).toBe(false);
    expect(admits(p, "ConfigMap", labelled({}))).toBe(true);
  });
  test("events under a selector: not for an object annotated skip-reflection", () => {
    const p = parseReflectionPolicy("events=selector(app)");
    expect(admits(p, "Event", labelled({ app: "x" }))).toBe(true);
    expect(admits(p, "Event", labelled({ app: "x" }, "ns", { "liqo.io/skip-reflection": "" }))).toBe(false);
  });
  test("a malformed selector is refused, naming it and the syntax", () => {
    expect(() => parseReflectionPolicy("secrets=selector(app in ())")).toThrow(
      'reflection policy: secrets=selector(app in ()): "app in ()" lists no values',
    );
    expect(() => parseReflectionPolicy({ secrets: "selector(bad key=x)" })).toThrow("cannot parse");
    expect(() => parseReflectionPolicy("secrets=selector()")).toThrow("secrets=selector() selects every object");
    expect(() => parseReflectionPolicy("secrets=selector(app=web")).toThrow("is not a reflection policy");
  });
});

describe("namespace overrides", () => {
  const cluster = parseReflectionPolicy("configmaps=opt-in");
  const overrides = new Map([
    ["tight", parsePolicyEntries("secrets=none")],
    ["loose", parsePolicyEntries("configmaps=all")],
  ]);
  const judge = createPolicyJudge(cluster, overrides);
  test("the kinds the annotation names replace the cluster's mode in that namespace only", () => {
    expect(judge.admits("Secret", labelled({}, "tight"))).toBe(false);
    expect(judge.admits("Secret", labelled({}, "other"))).toBe(true);
    expect(judge.admits("ConfigMap", labelled({}, "loose"))).toBe(true);
    expect(judge.admits("ConfigMap", labelled({}, "other"))).toBe(false);
  });
  test("kinds it does not name follow the cluster", () => {
    expect(judge.admits("ConfigMap", labelled({}, "tight"))).toBe(false);
    expect(judge.admits("Secret", labelled({}, "loose"))).toBe(true);
  });
  test("parsePolicyEntries keeps only the kinds named", () =>
    expect(parsePolicyEntries("secrets=none")).toEqual({ secrets: "none" }));
  test("from the namespace's annotation; empty or absent: no override; bad input refused naming the namespace", () => {
    const ns = (v?: string): KubeObject => ({
      metadata: { name: "team-a", annotations: v === undefined ? {} : { "liqo.io/reflection-policy": v } },
    });
    expect(overrideOfNamespace(ns())).toBeUndefined();
    expect(overrideOfNamespace(ns(" "))).toBeUndefined();
    expect(overrideOfNamespace(ns("secrets=opt-in"))).toEqual({ secrets: "opt-in" });
    expect(() => overrideOfNamespace(ns("deployments=none"))).toThrow(
      'namespace team-a: annotation liqo.io/reflection-policy=deployments=none: unknown kind "deployments"',
    );
  });
});

describe("EndpointSlices follow their Service", () => {
  const slice = (service?: string) =>
    ({
      metadata: { name: "s-1", namespace: "ns", labels: service ? { "kubernetes.io/service-name": service } : {} },
    }) as KubeObject;
  const services = new Map<string, KubeObject>([
    ["web", labelled({ app: "web" })],
    ["db", labelled({ app: "db" })],
    ["skipped", labelled({ app: "web" }, "ns", { "liqo.io/skip-reflection": "true" })],
  ]);
  const lookup = (kind: string, ns: string, name: string) =>
    kind === "Service" && ns === "ns" ? services.get(name) : undefined;
  const p = parseReflectionPolicy("services=selector(app=web)");
  test("reflected while its Service is", () => expect(admits(p, "EndpointSlice", slice("web"), lookup)).toBe(true));
  test("not when the policy leaves the Service out", () =>
    expect(admits(p, "EndpointSlice", slice("db"), lookup)).toBe(false));
  test("not when the Service skips reflection", () =>
    expect(admits(p, "EndpointSlice", slice("skipped"), lookup)).toBe(false));
  test("not when the Service does not exist", () =>
    expect(admits(p, "EndpointSlice", slice("gone"), lookup)).toBe(false));
  test("a slice without the label, or without look-ups, follows only its own policy", () => {
    expect(admits(p, "EndpointSlice", slice(), lookup)).toBe(true);
    expect(admits(p, "EndpointSlice", slice("db"))).toBe(true);
    expect(admits(parseReflectionPolicy("endpointslices=none"), "EndpointSlice", slice("web"), lookup)).toBe(false);
  });
  test("a Service's followers are its slices, by label", () => {
    expect(followersOf("Service", { metadata: { name: "web", namespace: "ns" } })).toEqual({
      kind: "EndpointSlice",
      labels: { "kubernetes.io/service-name": "web" },
    });
    expect(followersOf("ConfigMap", { metadata: { name: "web", namespace: "ns" } })).toBeUndefined();
  });
});
