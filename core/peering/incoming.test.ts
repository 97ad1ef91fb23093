import { describe, expect, test } from "bun:test";
import { incomingAllowed, incomingDisabledMessage } from "./incoming.ts";

describe("incomingAllowed", () => {
  const fc = (incomingPeeringEnabled?: "Auto" | "Yes" | "No") =>
    ({ spec: { foreignAuthUrl: "https://a.b:1", incomingPeeringEnabled } }) as never;
  test("No refuses", () => expect(incomingAllowed(fc("No"))).toBe(false));
  test("Yes and Auto accept", () => {
    expect(incomingAllowed(fc("Yes"))).toBe(true);
    expect(incomingAllowed(fc("Auto"))).toBe(true);
  });
  test("an unset field is Auto", () => expect(incomingAllowed(fc())).toBe(true));
  test("a cluster with no ForeignCluster yet may peer (it holds our token)", () =>
    expect(incomingAllowed(undefined)).toBe(true));
});

test("the refusal names the ForeignCluster and the command that allows it", () => {
  const m = incomingDisabledMessage("rome", "rome", "milan");
  expect(m).toContain("ForeignCluster rome");
  expect(m).toContain("kubectl patch foreigncluster rome");
  expect(m).toContain('"incomingPeeringEnabled":"Auto"');
});
