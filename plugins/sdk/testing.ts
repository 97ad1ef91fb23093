// What a plugin's own tests use (`import { testReflectorPlugin } from "@liqo-bun/plugin-sdk/testing"`):
// the conformance kit and the plugin host the engine runs, to call a built .wasm the way a peering
// does. In this checkout it is the host's source; `liqoctl plugin init` vendors it bundled
// (testing.js and the drop-in worker, worker.ts), so a project needs nothing else but Bun.
export { type ConformanceOptions, conformanceSuite, runConformance, testReflectorPlugin } from "../conformance.ts";
export type { CacheLookup, Decision, KubeObject, ReflectionContext } from "../../core/reflection/abi.ts";
export { PluginError } from "../../core/reflection/errors.ts";
export { type LoadOptions, loadPlugin, type ReflectorPlugin } from "../../core/reflection/host.ts";
