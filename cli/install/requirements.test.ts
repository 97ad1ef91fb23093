import { describe, expect, test } from "bun:test";
import { parseVersion, requirementProblems } from "./requirements.ts";

const all = ["validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingwebhookconfigurations"];
const v = (major: string, minor: string, gitVersion = `v${major}.${minor.replace("+", "")}.0`) => ({
  major,
  minor,
  gitVersion,
});

describe("parseVersion", () => {
  const cases: [string, Parameters<typeof parseVersion>[0], ReturnType<typeof parseVersion>][] = [
    ["plain", v("1", "34"), { major: 1, minor: 34 }],
    ["a provider's + suffix", v("1", "30+", "v1.30.4-eks-a737599"), { major: 1, minor: 30 }],
    ["only gitVersion", { gitVersion: "v1.31.2+k3s1" }, { major: 1, minor: 31 }],
    ["nothing readable", { gitVersion: "dev" }, undefined],
  ];
  for (const [name, input, want] of cases) test(name, () => expect(parseVersion(input)).toEqual(want));
});

describe("requirementProblems", () => {
  test("1.30 with the admission APIs: none", () =>
    expect(requirementProblems({ version: v("1", "30"), admissionResources: all })).toEqual([]));
  test("1.34: none", () => expect(requirementProblems({ version: v("1", "34"), admissionResources: all })).toEqual([]));
  test("2.0: none", () => expect(requirementProblems({ version: v("2", "0"), admissionResources: all })).toEqual([]));
  test("1.29 names the version found, the minimum and why", () =>
    expect(requirementProblems({ version: v("1", "29+", "v1.29.8-gke.1"), admissionResources: all })).toEqual([
      "Kubernetes v1.29.8-gke.1 is too old: liqo needs 1.30 or later (ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 is GA from 1.30)",
    ]));
  test("1.28 without ValidatingAdmissionPolicy in v1: the version and the missing resources", () => {
    const got = requirementProblems({ version: v("1", "28"), admissionResources: ["mutatingwebhookconfigurations"] });
    expect(got[0]).toStartWith("Kubernetes v1.28.0 is too old");
    expect(got.slice(1)).toEqual([
      "admissionregistration.k8s.io/v1 does not serve validatingadmissionpolicies, needed by the auth service's ValidatingAdmissionPolicy",
      "admissionregistration.k8s.io/v1 does not serve validatingadmissionpolicybindings, needed by its binding",
    ]);
  });
  test("admissionregistration.k8s.io/v1 not served", () =>
    expect(requirementProblems({ version: v("1", "31") })).toEqual([
      "the API server does not serve admissionregistration.k8s.io/v1, which liqo's admission objects use",
    ]));
  test("an unreadable version (a development build) is let through", () =>
    expect(requirementProblems({ version: { gitVersion: "dev" }, admissionResources: all })).toEqual([]));
});
