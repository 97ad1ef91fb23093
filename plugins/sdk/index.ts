// The SDK as a package: `import { reflector, Result } from "@liqo-bun/plugin-sdk"`.
export * from "./assembly/index";
