import { describe, expect, test } from "bun:test";
import { CliError } from "./errors.ts";
import { askedResources, requestedPatch } from "./peer-resources.ts";

describe("liqoctl peer: asked amounts", () => {
  test("--cpu, --memory, --pods and repeated --resource, both spellings", () => {
    const raw = ["--cpu", "2", "--resource", "nvidia.com/gpu=1", "--resource=ephemeral-storage=10Gi"];
    expect(askedResources({ cpu: "2", memory: "4Gi", pods: "20" }, raw)).toEqual({
      cpu: "2",
      memory: "4Gi",
      pods: "20",
      "nvidia.com/gpu": "1",
      "ephemeral-storage": "10Gi",
    });
  });

  test("none given: nothing asked (the provider's rule)", () => expect(askedResources({}, [])).toBeUndefined());

  test.each([
    [{ cpu: "-1" }, [], /--cpu: "-1" is negative; give 0 or more/],
    [{ memory: "2x" }, [], /--memory: "2x" is not a Kubernetes quantity/],
    [{ pods: "1.5" }, [], /--pods: "1\.5" is not a whole number/],
    [{}, ["--resource", "cpus=2"], /--resource: unknown resource "cpus": did you mean "cpu"\?/],
    [
      {},
      ["--resource", "gpu=1"],
      /unknown resource "gpu": give .* an extended resource with a domain \(e\.g\. nvidia\.com\/gpu\)/,
    ],
    [{}, ["--resource", "nvidia.com/gpu"], /--resource "nvidia\.com\/gpu": give name=quantity/],
    [{ cpu: "1" }, ["--resource", "cpu=2"], /cpu is asked for twice/],
  ] as const)("%p %p is refused before anything is written", (args, raw, message) => {
    expect(() => askedResources(args, [...raw])).toThrow(CliError);
    expect(() => askedResources(args, [...raw])).toThrow(message);
  });

  test("asking again replaces the earlier amounts (merge patch: the ones not asked now removed); asking nothing keeps them", () => {
    expect(requestedPatch({ cpu: "2", "nvidia.com/gpu": "1" }, { cpu: "1", memory: "2Gi" })).toEqual({
      requestedResources: { cpu: "1", "nvidia.com/gpu": null, memory: "2Gi" },
    });
    expect(requestedPatch({ cpu: "2" }, undefined)).toEqual({});
    expect(requestedPatch(undefined, { pods: "5" })).toEqual({ requestedResources: { pods: "5" } });
  });
});
