import { describe, expect, test } from "bun:test";
import type { StatusDocument } from "../status-data.ts";
import { fieldAt, fieldText, peersDocument } from "./info.ts";

const doc = {
  clusterIdentity: { name: "rome", id: "rome-id", labels: {}, authUrl: null },
  installation: { namespace: "liqo", version: "0.2.0", healthy: true, components: [] },
  peerings: [
    { name: "milan", clusterID: "milan-id", outgoing: "Established" },
    { name: "naples", clusterID: "naples-id", outgoing: "None" },
  ],
  virtualNodes: [
    { peering: "milan", clusterID: "milan-id", name: "liqo-milan" },
    { peering: "naples", clusterID: "naples-id", name: "liqo-naples" },
  ],
  reflectorPlugins: [{ peer: "milan", name: "pdbs" }],
  quotas: { enforcement: "hard", peerings: [{ peering: "naples" }], asked: [] },
} as unknown as StatusDocument;

describe("info --get", () => {
  test("a field by its dotted path; array items by index", () => {
    expect(fieldAt(doc, "clusterIdentity.name")).toBe("rome");
    expect(fieldAt(doc, "peerings.1.outgoing")).toBe("None");
    expect(fieldAt(doc, "installation.healthy")).toBe(true);
    expect(fieldAt(doc, "clusterIdentity.authUrl")).toBeNull();
  });

  test("a wrong path names where it went wrong and what is there", () => {
    expect(() => fieldAt(doc, "clusterIdentity.nme")).toThrow(
      '--get clusterIdentity.nme: clusterIdentity has no field "nme"; its fields: name, id, labels, authUrl',
    );
    expect(() => fieldAt(doc, "peerings.2")).toThrow('peerings has no field "2"; its fields: 0, 1');
    expect(() => fieldAt(doc, "nothing")).toThrow('the document has no field "nothing"');
    expect(() => fieldAt(doc, "clusterIdentity.name.first")).toThrow('(it is "rome")');
    expect(() => fieldAt(doc, " ")).toThrow("--get needs a field path");
  });

  test("strings, numbers and booleans print bare; the rest as JSON", () => {
    expect(fieldText("rome")).toBe("rome");
    expect(fieldText(3)).toBe("3");
    expect(fieldText(false)).toBe("false");
    expect(fieldText(null)).toBe("null");
    expect(JSON.parse(fieldText({ a: [1] }))).toEqual({ a: [1] });
  });
});

describe("info peer", () => {
  test("narrows every section to the peerings named, by name or cluster ID", () => {
    const milan = peersDocument(doc, ["milan"]);
    expect(milan.peerings.map((p) => p.name)).toEqual(["milan"]);
    expect(milan.virtualNodes.map((v) => v.name)).toEqual(["liqo-milan"]);
    expect(milan.reflectorPlugins).toHaveLength(1);
    expect(milan.quotas).toEqual([]);
    expect(peersDocument(doc, ["naples-id"]).quotas).toMatchObject([{ peering: "naples" }]);
  });

  test("an unknown peering is refused, listing those there are", () =>
    expect(() => peersDocument(doc, ["milan", "turin"])).toThrow(
      "no peering turin; peerings here: milan (milan-id), naples (naples-id)",
    ));
});
