import { describe, expect, test } from "bun:test";
import {
  allowKind,
  coveredVerbs,
  disallowKind,
  isLiqoctlRule,
  resolveKind,
  type ServedResource,
} from "./plugin-rules.ts";

// Part of what a cluster's discovery serves: a kind in two groups, a short name, a cluster-scoped kind.
const served: ServedResource[] = [
  {
    group: "policy",
    version: "v1",
    kind: "PodDisruptionBudget",
    plural: "poddisruptionbudgets",
    singular: "poddisruptionbudget",
    shortNames: ["pdb"],
    namespaced: true,
  },
  {
    group: "",
    version: "v1",
    kind: "Event",
    plural: "events",
    singular: "event",
    shortNames: ["ev"],
    namespaced: true,
  },
  {
    group: "events.k8s.io",
    version: "v1",
    kind: "Event",
    plural: "events",
    singular: "event",
    shortNames: ["ev"],
    namespaced: true,
  },
  { group: "example.com", version: "v1beta1", kind: "Widget", plural: "widgets", singular: "widget", namespaced: true },
  { group: "example.com", version: "v1", kind: "Widget", plural: "widgets", singular: "widget", namespaced: true },
];
const PDB = { group: "policy", plural: "poddisruptionbudgets" };

// What `helm get values liqo` answers on a release installed with a rule written by hand.
const handRule = {
  apiGroups: ["networking.k8s.io", "policy"],
  resources: ["networkpolicies", "poddisruptionbudgets"],
  verbs: ["get", "list", "watch", "delete"],
};
const release = () => ({
  clusterName: "rome",
  networking: { podCIDR: "10.200.0.0/16" },
  reflection: { policy: { secrets: "opt-in" }, pluginRules: [] as unknown[] },
});

describe("resolveKind: a kind as the user names it, against discovery", () => {
  test("kind, plural, singular and short name, any case, with or without the group", () => {
    for (const name of [
      "PodDisruptionBudget",
      "poddisruptionbudget",
      "poddisruptionbudgets",
      "PDB",
      "pdb.policy",
      "PodDisruptionBudget.policy",
      "poddisruptionbudgets.policy",
    ])
      expect({ name, got: resolveKind(name, served).plural }).toEqual({ name, got: "poddisruptionbudgets" });
    // One resource served in two versions is one resource.
    expect(resolveKind("widget", served)).toMatchObject({ group: "example.com", plural: "widgets" });
  });

  test("a name two groups serve is refused, naming both; the group picks one", () => {
    expect(() => resolveKind("Event", served)).toThrow(
      "Event names 2 resources here (events, events.events.k8s.io): give the group",
    );
    expect(resolveKind("events.events.k8s.io", served).group).toBe("events.k8s.io");
  });

  test("an unknown kind names how to list the kinds; a wrong group names the groups that serve it", () => {
    expect(() => resolveKind("Gizmo", served)).toThrow(
      "unknown kind Gizmo: this cluster serves no such resource; kubectl api-resources --namespaced lists the kinds it serves",
    );
    expect(() => resolveKind("pdb.apps", served)).toThrow(
      "serves no such resource in group apps (it does in: poddisruptionbudgets.policy)",
    );
  });
});

describe("allowKind and disallowKind: the release's values with one rule more or less", () => {
  test("allow adds get,list,watch,delete on the kind and keeps every other value", () => {
    const before = release();
    const e = allowKind(before, PDB);
    expect(e.values).toEqual({
      ...before,
      reflection: {
        ...before.reflection,
        pluginRules: [
          { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["get", "list", "watch", "delete"] },
        ],
      },
    });
    expect(e.changes).toEqual(["reflection.pluginRules: + get,list,watch,delete on poddisruptionbudgets.policy"]);
    // The input is not modified.
    expect(before.reflection.pluginRules).toEqual([]);
    // No reflection key at all (a release installed without plugins): made.
    expect(allowKind({ clusterName: "rome" }, { group: "", plural: "widgets" }).values).toEqual({
      clusterName: "rome",
      reflection: {
        pluginRules: [{ apiGroups: [""], resources: ["widgets"], verbs: ["get", "list", "watch", "delete"] }],
      },
    });
  });

  test("allowing twice changes nothing and says so; --grant on an allowed kind changes only the switch", () => {
    const once = allowKind(release(), PDB).values;
    const twice = allowKind(once, PDB);
    expect(twice.changes).toEqual([]);
    expect(twice.values).toEqual(once);
    expect(twice.notes).toEqual(["poddisruptionbudgets.policy is already allowed (reflection.pluginRules)"]);
    const granted = allowKind(once, PDB, { grant: true });
    expect(granted.changes).toEqual([
      "reflection.grantPeerPlugins: true (grant peers' reflector plugins the kinds this cluster accepts)",
    ]);
    expect((granted.values.reflection as { pluginRules: unknown[] }).pluginRules).toHaveLength(1);
    expect(allowKind(granted.values, PDB, { grant: true }).changes).toEqual([]);
  });

  test("a kind a hand-written rule covers fully is not added again; one covered in part gets liqoctl's rule", () => {
    const v = { reflection: { pluginRules: [handRule] } };
    const e = allowKind(v, PDB);
    expect(e.changes).toEqual([]);
    expect(e.notes).toEqual([
      "poddisruptionbudgets.policy is already allowed by a rule of reflection.pluginRules written by hand",
    ]);
    const readOnly = { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["get", "list", "watch"] };
    expect(
      (allowKind({ reflection: { pluginRules: [readOnly] } }, PDB).values.reflection as { pluginRules: unknown[] })
        .pluginRules,
    ).toEqual([
      readOnly,
      { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["get", "list", "watch", "delete"] },
    ]);
    expect(coveredVerbs([{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }], PDB)).toEqual([
      "get",
      "list",
      "watch",
      "delete",
    ]);
  });

  test("disallow removes exactly liqoctl's rule: hand-written rules, other kinds and other values stay", () => {
    const handRead = { ...handRule, verbs: ["get", "list", "watch"] };
    const other = { apiGroups: ["example.com"], resources: ["widgets"], verbs: ["get", "list", "watch", "delete"] };
    const start = { ...release(), reflection: { ...release().reflection, pluginRules: [handRead, other] } };
    const allowed = allowKind(allowKind(start, { group: "example.com", plural: "gadgets" }).values, PDB).values;
    const e = disallowKind(allowed, PDB);
    expect(e.changes).toEqual(["reflection.pluginRules: - get,list,watch,delete on poddisruptionbudgets.policy"]);
    expect((e.values.reflection as { pluginRules: unknown[] }).pluginRules).toEqual([
      handRead,
      other,
      { apiGroups: ["example.com"], resources: ["gadgets"], verbs: ["get", "list", "watch", "delete"] },
    ]);
    // The hand-written rule still covers the kind: said, and left.
    expect(e.notes[0]).toContain(
      "a rule of reflection.pluginRules written by hand still gives get, list, watch on poddisruptionbudgets.policy",
    );
    expect({ ...e.values, reflection: undefined }).toEqual({ ...start, reflection: undefined });
    // Disallowed again: nothing to do.
    const again = disallowKind(disallowKind(allowKind(release(), PDB).values, PDB).values, PDB);
    expect(again.changes).toEqual([]);
    expect(again.notes).toEqual([
      "poddisruptionbudgets.policy is not allowed (no rule of reflection.pluginRules covers it)",
    ]);
  });

  test("allow then disallow gives back the values it started from, granting switched off with the last rule", () => {
    const start = release();
    const on = allowKind(start, PDB, { grant: true }).values;
    expect(on.reflection).toMatchObject({ grantPeerPlugins: true });
    const off = disallowKind(on, PDB);
    expect(off.changes).toEqual([
      "reflection.pluginRules: - get,list,watch,delete on poddisruptionbudgets.policy",
      "reflection.grantPeerPlugins: false (no plugin kind is allowed any more: peers' plugins are not granted)",
    ]);
    expect(off.values).toEqual({ ...start, reflection: { ...start.reflection, grantPeerPlugins: false } });
    // With another rule left, granting stays on.
    const two = allowKind(on, { group: "example.com", plural: "widgets" }).values;
    expect(disallowKind(two, PDB).values.reflection).toMatchObject({ grantPeerPlugins: true });
  });

  test("liqoctl's rule is recognised by its shape only: verbs in any order, nothing more", () => {
    expect(
      isLiqoctlRule(
        { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["delete", "watch", "list", "get"] },
        PDB,
      ),
    ).toBe(true);
    expect(isLiqoctlRule(handRule, PDB)).toBe(false);
    expect(
      isLiqoctlRule(
        { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["get", "list", "watch"] },
        PDB,
      ),
    ).toBe(false);
    expect(
      isLiqoctlRule(
        {
          apiGroups: ["policy"],
          resources: ["poddisruptionbudgets"],
          verbs: ["get", "list", "watch", "delete", "create"],
        },
        PDB,
      ),
    ).toBe(false);
    expect(
      isLiqoctlRule(
        {
          apiGroups: ["policy"],
          resources: ["poddisruptionbudgets"],
          resourceNames: ["x"],
          verbs: ["get", "list", "watch", "delete"],
        },
        PDB,
      ),
    ).toBe(false);
  });
});
