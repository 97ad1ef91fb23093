import { describe, expect, test } from "bun:test";
import { CliError } from "../cli-errors.ts";
import { reflectionPolicyFlag } from "./virtual-kubelet.ts";

const cm = (annotations?: Record<string, string>) => ({ metadata: { name: "c", namespace: "n", annotations } });

describe("liqo virtual-kubelet --reflection-policy", () => {
  test("absent: everything is reflected", () =>
    expect(reflectionPolicyFlag(undefined).admits("Secret", cm())).toBe(true));
  test("given: in force for the process", () => {
    const p = reflectionPolicyFlag("secrets=opt-in,ingresses=none");
    expect([
      p.admits("Secret", cm()),
      p.admits("Secret", cm({ "liqo.io/allow-reflection": "true" })),
      p.admits("Ingress", cm()),
      p.admits("ConfigMap", cm()),
    ]).toEqual([false, true, false, true]);
  });
  test("an unknown kind is refused as a flag error naming the flag", () => {
    expect(() => reflectionPolicyFlag("pods=none")).toThrow(CliError);
    expect(() => reflectionPolicyFlag("pods=none")).toThrow('--reflection-policy pods=none: unknown kind "pods"');
  });
});
