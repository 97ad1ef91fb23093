import { describe, expect, test } from "bun:test";
import { CliError } from "../cli-errors.ts";
import { createPolicyJudge } from "../reflection/policy.ts";
import { reflectionPolicyFlag } from "./virtual-kubelet.ts";

const cm = (annotations?: Record<string, string>) => ({ metadata: { name: "c", namespace: "n", annotations } });
/** The flag's policy as the role's base (namespace overrides: tests/e2e/reflection-policies.test.ts). */
const judged = (text: string | undefined) => createPolicyJudge(reflectionPolicyFlag(text));

describe("liqo virtual-kubelet --reflection-policy", () => {
  test("absent: everything is reflected", () => expect(judged(undefined).admits("Secret", cm())).toBe(true));
  test("given: the base for the process", () => {
    const p = judged("secrets=opt-in,ingresses=none");
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
