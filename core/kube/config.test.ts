import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadKubeConfig, mergeKubeconfigs, usesInClusterConfig } from "./config.ts";
import type { InClusterKubeConfig } from "./incluster.ts";
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
  contexts: [
    { name: "rome", context: { cluster: "rome", user: "admin" } },
    { name: "broken", context: { cluster: "nowhere", user: "admin" } },
  ],
  "current-context": "rome",
});
const two = file("two.yaml", {
  clusters: [
    { name: "milan", cluster: { server: "https://127.0.0.1:2" } },
    { name: "rome", cluster: { server: "https://shadowed:9" } },
  ],
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
    expect(() => loadKubeConfig({ kubeconfig: one, context: "paris" })).toThrow(
      /context "paris" not found.*available contexts: rome, broken/,
    );
  });
  test("a context pointing to an undefined cluster names the cluster", () => {
    expect(() => loadKubeConfig({ kubeconfig: one, context: "broken" })).toThrow(
      /cluster "nowhere", which is not defined/,
    );
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

describe("in-cluster configuration (selection; tests/e2e/incluster.test.ts uses it against a cluster)", () => {
  const sa = join(dir, "sa");
  const home = join(dir, "home-without-kube");
  const pod = {
    HOME: home,
    KUBERNETES_SERVICE_HOST: "10.96.0.1",
    KUBERNETES_SERVICE_PORT: "443",
    LIQO_SERVICEACCOUNT_DIR: sa,
  };
  mkdirSync(sa, { recursive: true });
  mkdirSync(home, { recursive: true });
  writeFileSync(join(sa, "ca.crt"), "not read until a request is made");
  writeFileSync(join(sa, "token"), "first\n");
  writeFileSync(join(sa, "namespace"), "liqo");

  test("applies only when no kubeconfig does and the pod variables are set", () => {
    const loaded = loadKubeConfig({ env: pod });
    expect(loaded.server).toBe("https://10.96.0.1:443");
    expect(loaded.inCluster).toEqual({ namespace: "liqo", dir: sa });
    expect(usesInClusterConfig({ env: { ...pod, KUBECONFIG: one } })).toBe(false);
    expect(usesInClusterConfig({ env: pod, kubeconfig: one })).toBe(false);
    expect(usesInClusterConfig({ env: { ...pod, KUBERNETES_SERVICE_PORT: undefined } })).toBe(false);
    expect(loadKubeConfig({ env: { ...pod, KUBECONFIG: one } }).context).toBe("rome");
  });
  test("an IPv6 service host is bracketed, as net.JoinHostPort does", () => {
    expect(loadKubeConfig({ env: { ...pod, KUBERNETES_SERVICE_HOST: "fd00::1" } }).server).toBe(
      "https://[fd00::1]:443",
    );
  });
  test("the token follows the file, and a vanished file keeps the last token", () => {
    const kc = loadKubeConfig({ env: pod }).kc as InClusterKubeConfig;
    expect(kc.bearerToken()).toBe("first");
    writeFileSync(join(sa, "token.new"), "second-longer");
    renameSync(join(sa, "token.new"), join(sa, "token"));
    expect(kc.bearerToken()).toBe("second-longer");
    rmSync(join(sa, "token"));
    expect(kc.bearerToken()).toBe("second-longer");
    writeFileSync(join(sa, "token"), "first\n");
  });
});

describe("rotating credentials in the kubeconfig", () => {
  test("kubectl's tokenFile is kept (relative to its kubeconfig) for the client to re-read", () => {
    mkdirSync(join(dir, "tf"), { recursive: true });
    writeFileSync(join(dir, "tf", "token"), "t\n");
    const path = join(dir, "tf", "config");
    writeFileSync(
      path,
      JSON.stringify({
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        users: [{ name: "u", user: { tokenFile: "token" } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      }),
    );
    expect(loadKubeConfig({ kubeconfig: path }).tokenFile).toBe(join(dir, "tf", "token"));
  });

  test("an exec command with a path separator is relative to its kubeconfig, a bare name is left for PATH", () => {
    const load = (command: string) => {
      const path = file(`exec-${command.replace(/\W/g, "")}.yaml`, {
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        users: [{ name: "u", user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command } } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      });
      return loadKubeConfig({ kubeconfig: path }).kc.getCurrentUser()!.exec.command;
    };
    expect(load("./bin/plugin")).toBe(join(dir, "bin", "plugin"));
    expect(load("gke-gcloud-auth-plugin")).toBe("gke-gcloud-auth-plugin");
  });
});
