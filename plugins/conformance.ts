// The conformance kit: one suite every reflector plugin, built-in or dropped in, must pass.
// Use it from a test file:   await testReflectorPlugin("path/to/plugin.wasm", { samples: [...] })
// It loads the plugin once to read its manifest, then registers one bun:test case per check
// (conformance-suite.ts holds them; `liqoctl plugin test <dir>` runs the same ones).
import { describe, test } from "bun:test";
import { type ConformanceOptions, conformanceSuite } from "./conformance-suite.ts";

export type { ConformanceOptions } from "./conformance-suite.ts";
export { conformanceSuite, runConformance } from "./conformance-suite.ts";

export async function testReflectorPlugin(wasm: string | Uint8Array, options: ConformanceOptions = {}): Promise<void> {
  const suite = await conformanceSuite(wasm, options);
  describe(suite.title, () => {
    for (const c of suite.cases) test(c.name, () => c.run());
  });
}
