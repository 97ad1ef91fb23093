// The wasm exports of ABI v1: a plugin's entry file has `export * from "@liqo-bun/plugin-sdk/exports"`.
export * from "./assembly/exports";
