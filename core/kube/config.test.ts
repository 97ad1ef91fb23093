import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadKubeConfig, mergeKubeconfigs } from "./config.ts";
import { KubeConfigError } from "./errors.ts";

const dir = mkdtempSync(join(tmpdir(), "kubeconfig-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, body: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(body));
  return path;
}

const one = file("one.yaml", {
  clusters: [{ name: "rome", cluster: { server: "https://127.0.0.1:1", "certificate-authority": "ca.crt" } }],
  users: [{ name: "admin", user: { token: "t1" } }],
  contexts: [{ name: "rome", context: { cluster: "rome", user: "admin" } }, { name: "broken", context: { cluster: "nowhere", user: "admin" } }],
  "current-context": "rome",
});
const two = file("two.yaml", {
  clusters: [{ name: "milan", cluster: { server: "https://127.0.0.1:2" } }, { name: "rome", cluster: { server: "https://shadowed:9" } }],
  users: [{ name: "admin2", user: { token: "t2" } }],
  contexts: [{ name: "milan", context: { cluster: "milan", user: "admin2" } }],
  "current-context": "milan",
});

describe("loadKubeConfig", () => {
  test("KUBECONFIG with several files: first current-context wins", () => {
    const cfg = loadKubeConfig({ env: { KUBECONFIG: `${one}:${two}` } });
    expect(cfg.context).toBe("rome");
    expect(cfg.server).toBe("https://127.0.0.1:1");
    expect(cfg.files).toEqual([one, two]);
  });
  test("--context selects a context defined in a later file", () => {
    const cfg = loadKubeConfig({ env: { KUBECONFIG: `${one}:${two}` }, context: "milan" });
    expect(cfg.server).toBe("https://127.0.0.1:2");
  });
  test("a name defined twice keeps the first file's entry", () => {
    const merged = mergeKubeconfigs([
      { clusters: [{ name: "rome", cluster: { server: "a" } }] },
      { clusters: [{ name: "rome", cluster: { server: "b" } }] },
    ]);
    expect(merged.clusters).toEqual([{ name: "rome", cluster: { server: "a" } }]);
  });
  test("relative certificate paths are resolved against their file", () => {
    const cfg = loadKubeConfig({ kubeconfig: one });
    expect(cfg.kc.getCurrentCluster()?.caFile).toBe(join(dir, "ca.crt"));
  });
  test("--kubeconfig overrides KUBECONFIG", () => {
    const cfg = loadKubeConfig({ kubeconfig: two, env: { KUBECONFIG: one } });
    expect(cfg.context).toBe("milan");
  });
  test("a missing context is a typed error listing the available ones", () => {
    expect(() => loadKubeConfig({ kubeconfig: one, context: "paris" })).toThrow(KubeConfigError);
    expect(() => loadKubeConfig({ kubeconfig: one, context: "paris" })).toThrow(/context "paris" not found.*available contexts: rome, broken/);
  });
  test("a context pointing to an undefined cluster names the cluster", () => {
    expect(() => loadKubeConfig({ kubeconfig: one, context: "broken" })).toThrow(/cluster "nowhere", which is not defined/);
  });
  test("a missing --kubeconfig file says so", () => {
    expect(() => loadKubeConfig({ kubeconfig: join(dir, "nope") })).toThrow(/does not exist/);
  });
  test("KUBECONFIG listing only missing files says so", () => {
    expect(() => loadKubeConfig({ env: { KUBECONFIG: join(dir, "a") } })).toThrow(/none of the files in KUBECONFIG/);
  });
  test("malformed YAML is reported with the file", () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "clusters: [unclosed");
    expect(() => loadKubeConfig({ kubeconfig: bad })).toThrow(/bad.yaml is not valid YAML/);
  });
});
