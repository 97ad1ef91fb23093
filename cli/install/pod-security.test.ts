import { describe, expect, test } from "bun:test";
import { KubeApiError } from "../../core/kube/errors.ts";
import type { KubeObject } from "../../core/kube/resources.ts";
import { CliError } from "../errors.ts";
import { ensurePodSecurity, podSecurityRefusal, podSecurityStep } from "./pod-security.ts";

const ns = (labels?: Record<string, string>): KubeObject => ({ metadata: { name: "liqo", labels } });
const enforce = "pod-security.kubernetes.io/enforce";

describe("podSecurityStep", () => {
  test("no namespace: create it labelled", () => expect(podSecurityStep(undefined)).toEqual({ do: "create" }));
  test("no label: label it", () => expect(podSecurityStep(ns())).toEqual({ do: "label" }));
  test("baseline: relabel, keeping what it was", () =>
    expect(podSecurityStep(ns({ [enforce]: "baseline" }))).toEqual({ do: "label", previous: "baseline" }));
  test("privileged already: nothing", () =>
    expect(podSecurityStep(ns({ [enforce]: "privileged" }))).toEqual({ do: "nothing" }));
});

describe("podSecurityRefusal", () => {
  const msg = podSecurityRefusal("liqo", { do: "label" }, 'namespaces "liqo" is forbidden');
  test("names the label, the cause, why liqo needs it and the command that fixes it", () => {
    expect(msg).toStartWith(
      'cannot label namespace liqo pod-security.kubernetes.io/enforce=privileged: namespaces "liqo" is forbidden',
    );
    expect(msg).toContain("the gateway runs privileged and the route agent on the host network");
    expect(msg).toContain("kubectl label namespace liqo pod-security.kubernetes.io/enforce=privileged --overwrite");
  });
  test("a namespace to create says so", () =>
    expect(podSecurityRefusal("x", { do: "create" }, "no")).toStartWith("cannot create namespace x with "));
});

describe("ensurePodSecurity", () => {
  const fake = (existing: KubeObject | undefined, fail?: KubeApiError) => {
    const calls: unknown[] = [];
    const client = {
      find: async () => existing,
      create: async (_r: unknown, obj: KubeObject) => {
        calls.push(["create", obj.metadata]);
        if (fail) throw fail;
        return obj;
      },
      mergePatch: async (_r: unknown, name: string, _n: unknown, patch: unknown) => {
        calls.push(["patch", name, patch]);
        if (fail) throw fail;
        return ns();
      },
    };
    return { client: client as Parameters<typeof ensurePodSecurity>[0], calls };
  };
  const labels = { [enforce]: "privileged" };

  test("creates a missing namespace with the label", async () => {
    const f = fake(undefined);
    expect(await ensurePodSecurity(f.client, "liqo")).toStartWith(
      "namespace liqo created with pod-security.kubernetes.io/enforce=privileged",
    );
    expect(f.calls).toEqual([["create", { name: "liqo", labels }]]);
  });
  test("labels an existing one, saying what it was", async () => {
    const f = fake(ns({ [enforce]: "baseline" }));
    expect(await ensurePodSecurity(f.client, "liqo")).toContain("privileged, was baseline");
    expect(f.calls).toEqual([["patch", "liqo", { metadata: { labels } }]]);
  });
  test("leaves a privileged one alone", async () => {
    const f = fake(ns(labels));
    expect(await ensurePodSecurity(f.client, "liqo")).toBeUndefined();
    expect(f.calls).toEqual([]);
  });
  test("a refusal becomes a CliError with the fix", async () => {
    const f = fake(ns(), new KubeApiError('namespaces "liqo" is forbidden', 403, "Forbidden", "liqo"));
    const err = await ensurePodSecurity(f.client, "liqo").catch((e: Error) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as Error).message).toContain("fix: have a cluster administrator run `kubectl label namespace liqo");
  });
  test("an unreachable server is not dressed up as a refusal", async () => {
    const f = fake(ns(), new KubeApiError("connection refused", 0, "ConnectionRefused", "liqo"));
    expect(await ensurePodSecurity(f.client, "liqo").catch((e: Error) => e)).toBeInstanceOf(KubeApiError);
  });
});
