import { describe, expect, test } from "bun:test";
import { explainBuild, explainModule } from "./build.ts";
import { ASSEMBLYSCRIPT_VERSION, checkPluginName, parseKind, SDK_PACKAGE, scaffoldFiles } from "./scaffold.ts";

describe("parseKind", () => {
  test("group/version/Kind", () =>
    expect(parseKind("policy/v1/PodDisruptionBudget")).toEqual({
      group: "policy",
      version: "v1",
      kind: "PodDisruptionBudget",
    }));
  test("version/Kind is the core group", () =>
    expect(parseKind("v1/PodTemplate")).toEqual({ group: "", version: "v1", kind: "PodTemplate" }));
  test("a beta version", () => expect(parseKind("example.com/v1beta2/Widget").version).toBe("v1beta2"));
  test("too few parts", () => expect(() => parseKind("Widget")).toThrow("pass --kind group/version/Kind"));
  test("an empty part", () =>
    expect(() => parseKind("policy//PodDisruptionBudget")).toThrow("pass --kind group/version/Kind"));
  test("a version that is not one", () =>
    expect(() => parseKind("policy/1/Foo")).toThrow('version "1" is not an API version'));
  test("a lowercase kind", () => expect(() => parseKind("policy/v1/poddisruptionbudget")).toThrow("must be CamelCase"));
  test("a group that is not a DNS name", () => expect(() => parseKind("Policy_X/v1/Foo")).toThrow("is not a DNS name"));
  test("a kind providers refuse (makes Pods)", () =>
    expect(() => parseKind("apps/v1/Deployment")).toThrow("providers refuse a plugin for it"));
  test("a kind a built-in reflects", () =>
    expect(() => parseKind("v1/ConfigMap")).toThrow("built-in configmaps reflector"));
  test("a kind ending in s (its plural guessed right)", () =>
    expect(() => parseKind("networking.k8s.io/v1/Ingress")).toThrow("built-in ingresses"));
});

describe("checkPluginName", () => {
  test("a DNS label passes", () => expect(() => checkPluginName("pdbs-2")).not.toThrow());
  for (const bad of ["Pdbs", "-pdbs", "pdbs_", "", "a".repeat(64)]) {
    test(`${JSON.stringify(bad)} is refused`, () => expect(() => checkPluginName(bad)).toThrow("is not a DNS label"));
  }
});

describe("scaffoldFiles", () => {
  const files = scaffoldFiles({
    name: "pdbs",
    group: "policy",
    version: "v1",
    kind: "PodDisruptionBudget",
    sdkVersion: "0.1.0",
  });
  const pkg = JSON.parse(files["package.json"]!);
  test("pins the compiler and takes the SDK from the vendored copy", () => {
    expect(pkg.devDependencies).toEqual({
      [SDK_PACKAGE]: "file:./vendor/plugin-sdk",
      assemblyscript: ASSEMBLYSCRIPT_VERSION,
    });
  });
  test("asconfig extends the SDK's settings, one entry, one output", () => {
    expect(JSON.parse(files["asconfig.json"]!)).toEqual({
      extends: `./node_modules/${SDK_PACKAGE}/asconfig.json`,
      entries: ["assembly/index.ts"],
      options: { outFile: "build/pdbs.wasm" },
    });
  });
  test("the entry imports the SDK by package name and re-exports the ABI", () => {
    expect(files["assembly/index.ts"]).toContain(`from "${SDK_PACKAGE}";`);
    expect(files["assembly/index.ts"]).toContain(`export * from "${SDK_PACKAGE}/exports";`);
    expect(files["assembly/index.ts"]).toContain(
      '"group":"policy","version":"v1","kind":"PodDisruptionBudget","direction":"forward"',
    );
  });
  test("a sample of the kind", () => {
    expect(Bun.YAML.parse(files["samples/poddisruptionbudget.yaml"]!)).toMatchObject({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "example" },
    });
  });
  test("a test with the conformance kit in drop-in mode", () => {
    expect(files["test/pdbs.test.ts"]).toContain('testReflectorPlugin(wasm, { samples: [sample], trust: "dropin" })');
  });
  test("a name that is no DNS label writes nothing", () => {
    expect(() =>
      scaffoldFiles({ name: "PDBs", group: "policy", version: "v1", kind: "PodDisruptionBudget", sdkVersion: "0.1.0" }),
    ).toThrow("is not a DNS label");
  });
});

describe("explainBuild", () => {
  test("an absolute import", () => {
    const out = "ERROR TS6054: File '~lib//tmp/x/vendor/plugin-sdk/index.ts' not found.";
    expect(explainBuild(out)).toEqual([expect.stringContaining(`import the SDK as "${SDK_PACKAGE}"`)]);
  });
  test("an internal --use abort name", () => {
    expect(explainBuild("ERROR AS111: Element 'plugins/sdk/assembly/abort/abort/abort' not found.")).toEqual([
      expect.stringContaining("drop it; the SDK's asconfig.json links its own"),
    ]);
  });
  test("the SDK not installed", () => {
    expect(explainBuild(`ERROR TS6054: File '~lib/${SDK_PACKAGE}/index.ts' not found.`)).toEqual([
      expect.stringContaining('run "bun install"'),
    ]);
  });
  test("the SDK compiled twice", () =>
    expect(explainBuild("ERROR TS2300: Duplicate identifier 'liqoSdkAbort'.")[0]).toContain("compiled twice"));
  test("anything else: no hint", () => expect(explainBuild("ERROR TS2304: Cannot find name 'foo'.")).toEqual([]));
});

describe("explainModule", () => {
  test("no ABI exports", () => {
    expect(explainModule(["it does not export liqo_abi_version, liqo_manifest"])).toEqual([
      expect.stringContaining(`export * from "${SDK_PACKAGE}/exports"`),
    ]);
  });
  test("no manifest registered", () => {
    expect(explainModule(["returned a manifest that is not JSON: Unexpected EOF"])).toEqual([
      expect.stringContaining("call reflector(MANIFEST, forward)"),
    ]);
  });
});
