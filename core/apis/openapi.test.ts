import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { oneOfWithDefault, quantity } from "./fields.ts";
import { toOpenApi } from "./openapi.ts";

describe("toOpenApi", () => {
  test("an entry is required unless optional", () => {
    const out = toOpenApi(v.object({ a: v.string(), b: v.optional(v.string()) }));
    expect(out.required).toEqual(["a"]);
    expect(out.properties?.b).toEqual({ type: "string" });
  });

  test("required lists are sorted, as controller-gen writes them", () => {
    expect(toOpenApi(v.object({ z: v.string(), a: v.string() })).required).toEqual(["a", "z"]);
  });

  test("an optional default becomes the CRD default", () => {
    expect(toOpenApi(v.optional(v.boolean(), true))).toEqual({ type: "boolean", default: true });
  });

  test("a picklist becomes an enum of strings", () => {
    expect(toOpenApi(v.picklist(["No", "Yes"]))).toEqual({ type: "string", enum: ["No", "Yes"] });
  });

  test("crdRequired keeps a defaulted field in the parent's required list", () => {
    const out = toOpenApi(v.object({ phase: oneOfWithDefault(["A", "B"] as const, "A", "d", true) }));
    expect(out.required).toEqual(["phase"]);
    expect(out.properties?.phase?.default).toBe("A");
  });

  test("regex, integer, minValue and isoTimestamp reach the CRD", () => {
    expect(toOpenApi(v.pipe(v.string(), v.regex(/^a+$/)))).toEqual({ type: "string", pattern: "^a+$" });
    expect(toOpenApi(v.pipe(v.number(), v.integer(), v.minValue(0)))).toEqual({ type: "integer", minimum: 0 });
    expect(toOpenApi(v.pipe(v.string(), v.isoTimestamp()))).toEqual({ type: "string", format: "date-time" });
  });

  test("v.check stays client-side", () => {
    expect(
      toOpenApi(
        v.pipe(
          v.string(),
          v.check((s) => s.length > 3, "too short"),
        ),
      ),
    ).toEqual({ type: "string" });
  });

  test("descriptions are kept, also through optional", () => {
    expect(toOpenApi(v.optional(v.pipe(v.string(), v.description("why"))))).toEqual({
      type: "string",
      description: "why",
    });
  });

  test("records and arrays", () => {
    expect(toOpenApi(v.record(v.string(), v.array(v.string())))).toEqual({
      type: "object",
      additionalProperties: { type: "array", items: { type: "string" } },
    });
  });

  test("a loose object preserves unknown fields", () => {
    expect(toOpenApi(v.looseObject({}))["x-kubernetes-preserve-unknown-fields"]).toBe(true);
  });

  test("a quantity is int-or-string with Kubernetes' pattern", () => {
    const out = toOpenApi(quantity());
    expect(out["x-kubernetes-int-or-string"]).toBe(true);
    expect(out.anyOf).toEqual([{ type: "integer" }, { type: "string" }]);
    expect(new RegExp(out.pattern!).test("500m")).toBe(true);
  });

  test("a schema without a CRD equivalent is an error naming the field", () => {
    expect(() => toOpenApi(v.object({ when: v.date() }), "Thing.spec")).toThrow("Thing.spec.when");
    expect(() => toOpenApi(v.object({ u: v.union([v.string(), v.boolean()]) }), "Thing.spec")).toThrow(
      "Thing.spec.u: a union needs",
    );
  });
});
