// The values liqoctl install hands Helm: flags win over detection, every mistake names its flag.
import { describe, expect, test } from "bun:test";
import { generatedClusterName } from "../../core/peering/identity.ts";
import { providers } from "./providers.ts";
import { chartValues, cidrProblem, helmInstallCommand, setFlagProblem } from "./values.ts";

const detected = {
  podCIDR: "10.244.0.0/16",
  serviceCIDR: "10.96.0.0/12",
  clusterLabels: { "liqo.io/provider": "kind" },
  serviceType: "NodePort" as const,
  notes: [],
};
const id = "3f1c2a00-0000-4000-8000-000000000000";
const values = (flags: Parameters<typeof chartValues>[1], d = detected) =>
  // biome-ignore lint/suspicious/noExplicitAny: chart values, a nested tree the assertions walk key by key
  chartValues(providers.kind!, flags, d, id) as Record<string, any>;
const error = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return "no error";
};

describe("cidrProblem", () => {
  test.each([
    ["10.244.0.0/16", undefined],
    ["0.0.0.0/0", undefined],
    ["10.244.0.1/16", "10.244.0.1/16 has host bits set; the network is 10.244.0.0/16"],
    ["10.244.0.0", "10.244.0.0 is not an IPv4 CIDR such as 10.244.0.0/16"],
    ["300.1.0.0/16", "300.1.0.0/16 is not an IPv4 CIDR such as 10.244.0.0/16"],
    ["10.0.0.0/33", "10.0.0.0/33 is not an IPv4 CIDR such as 10.244.0.0/16"],
  ])("%s", (cidr, problem) => expect(cidrProblem(cidr)).toBe(problem));
});

describe("setFlagProblem", () => {
  test.each([
    ["auth.replicas=2", undefined],
    ["pod.nodeSelector.kubernetes\\.io/os=linux", undefined],
    ["a=1,b=2", undefined],
    ["auth.replicas", "--set auth.replicas: expected key=value (Helm syntax), e.g. --set auth.service.type=NodePort"],
    ["=2", "--set =2: expected key=value (Helm syntax), e.g. --set auth.service.type=NodePort"],
    ["auth..replicas=2", "--set auth..replicas=2: the key has an empty path segment; write it as a.b.c=value"],
  ])("%s", (flag, problem) => expect(setFlagProblem(flag)).toBe(problem));
});

describe("chartValues", () => {
  test("detected networks, generated name from the cluster ID, provider label, defaults", () => {
    const v = values({});
    expect(v.networking).toEqual({ podCIDR: "10.244.0.0/16", serviceCIDR: "10.96.0.0/12", reservedSubnets: [] });
    expect(v.clusterName).toBe(generatedClusterName(id));
    expect(v.clusterId).toBe(id);
    expect(v.clusterLabels).toEqual({ "liqo.io/provider": "kind" });
    expect(v.sharingPercentage).toBe(30);
    expect(v.controllerManager).toEqual({ replicas: 1 });
    expect(v.auth).toEqual({ service: { type: "NodePort" } });
    expect(v.image).toBeUndefined();
  });

  test("flags win over detection", () => {
    const v = values({
      podCidr: "10.1.0.0/16",
      serviceCidr: "10.2.0.0/16",
      clusterName: "rome",
      clusterLabels: "liqo.io/provider=mine,region=south",
      apiServerUrl: "https://1.2.3.4:6443/",
      version: "0.2.0",
    });
    expect(v.networking.podCIDR).toBe("10.1.0.0/16");
    expect(v.networking.serviceCIDR).toBe("10.2.0.0/16");
    expect(v.clusterName).toBe("rome");
    expect(v.clusterLabels).toEqual({ "liqo.io/provider": "mine", region: "south" });
    expect(v.apiServer).toEqual({ url: "https://1.2.3.4:6443" });
    expect(v.image).toEqual({ tag: "0.2.0" });
  });

  test("--enable-ha doubles the controller manager and the gateway", () => {
    const v = values({ enableHa: true });
    expect(v.controllerManager.replicas).toBe(2);
    expect(v.gateway.replicas).toBe(2);
  });

  test("--enable-metrics turns on metrics.enabled; without it the chart's default (off) stands", () => {
    expect(values({ enableMetrics: true }).metrics).toEqual({ enabled: true });
    expect(values({}).metrics).toBeUndefined();
  });

  test("--reflection-policy: the whole policy in reflection.policy, defaults for the kinds it leaves out; without it, the chart's", () => {
    const v = values({ reflectionPolicy: "secrets=opt-in,ingresses=none" });
    expect(v.reflection.policy).toEqual({
      configmaps: "all",
      secrets: "opt-in",
      services: "all",
      endpointslices: "all",
      ingresses: "none",
      events: "all",
    });
    expect(values({}).reflection).toBeUndefined();
  });

  test("missing networks name both flags", () => {
    const msg = error(() => values({}, { ...detected, podCIDR: undefined, serviceCIDR: undefined } as never));
    expect(msg).toContain("pass --pod-cidr (the --cluster-cidr of kube-controller-manager");
    expect(msg).toContain("pass --service-cidr");
  });

  test.each([
    [{ sharingPercentage: "50.5" }, "--sharing-percentage 50.5: use a whole number from 0 to 100"],
    [{ sharingPercentage: "-1" }, "--sharing-percentage -1: use a whole number from 0 to 100"],
    [
      { reservedSubnets: "10.244.0.0/16" },
      "--reserved-subnets 10.244.0.0/16: the pod and service CIDRs are reserved already; leave them out",
    ],
    [{ clusterName: "a".repeat(45) }, "--cluster-name: cluster name"],
    [{ clusterLabels: "a=b,a=c" }, '--cluster-labels: cluster label "a" is given twice'],
    [{ apiServerUrl: "not a url" }, "--api-server-url not a url: use the https:// URL"],
    [
      { reflectionPolicy: "pods=none" },
      '--reflection-policy pods=none: unknown kind "pods"; reflection policies exist for configmaps, secrets',
    ],
    [
      { reflectionPolicy: "secrets=maybe" },
      '--reflection-policy secrets=maybe: secrets="maybe" is not a reflection policy; use all, opt-in or none',
    ],
  ])("%p is refused", (flags, message) => expect(error(() => values(flags))).toContain(message));
});

describe("helmInstallCommand (what --only-output-values prints)", () => {
  test("the --set flags given are kept, each quoted only when the shell needs it", () =>
    expect(
      helmInstallCommand("liqo", "liqo", "values.yaml", [
        "auth.service.type=NodePort",
        "clusterLabels.team=a b",
        "networking.reservedSubnets={10.0.0.0/8,192.168.0.0/16}",
        "x=it's",
      ]),
    ).toBe(
      "helm upgrade --install liqo <chart> --namespace liqo --values values.yaml --set auth.service.type=NodePort --set 'clusterLabels.team=a b' --set 'networking.reservedSubnets={10.0.0.0/8,192.168.0.0/16}' --set 'x=it'\\''s'",
    ));
  test("without --set, only the values file", () =>
    expect(helmInstallCommand("liqo", "liqo-system", "/tmp/v.yaml", [])).toBe(
      "helm upgrade --install liqo <chart> --namespace liqo-system --values /tmp/v.yaml",
    ));
});
