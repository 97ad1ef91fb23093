import { expect, test } from "bun:test";
import { dockerfileRuntime } from "../../scripts/build-image.ts";
import { roleBunFlags } from "./roles.ts";

test("roles started as processes take the image's Bun flags, or LIQO_ROLE_BUN_FLAGS's", () => {
  const entrypoint = dockerfileRuntime().entrypoint;
  expect(roleBunFlags({})).toEqual(entrypoint.slice(1, entrypoint.indexOf("cli/liqo.ts")));
  // The image runs with --smol (the Dockerfile says why); a role measured here must too.
  expect(roleBunFlags({})).toContain("--smol");
  expect(roleBunFlags({ LIQO_ROLE_BUN_FLAGS: "" })).toEqual([]);
  expect(roleBunFlags({ LIQO_ROLE_BUN_FLAGS: " --smol  --expose-gc " })).toEqual(["--smol", "--expose-gc"]);
});
