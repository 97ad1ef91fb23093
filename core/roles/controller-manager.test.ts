import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "../cli-errors.ts";
import controllerManager, {
  CONTROLLERS,
  clusterLabelsFlag,
  parseControllers,
  peerQuotaFlags,
} from "./controller-manager.ts";

describe("liqo controller-manager --controllers", () => {
  test("defaults to every controller, as Liqo's controller manager runs them all", async () => {
    const args = await (typeof controllerManager.args === "function"
      ? controllerManager.args()
      : controllerManager.args);
    expect(parseControllers(args!.controllers.default).sort()).toEqual([...CONTROLLERS].sort());
  });

  test("the chart's default is every controller too", () => {
    const values = readFileSync(join(import.meta.dir, "../../chart/values.yaml"), "utf8");
    const line = values.match(/^controllerManager:[\s\S]*?^\s+controllers:\s*(\S+)/m)?.[1];
    expect(line?.split(",").sort()).toEqual([...CONTROLLERS].sort());
  });

  test("a subset is kept as given", () => {
    expect(parseControllers(" shadowpod, resourcerequest ")).toEqual(["shadowpod", "resourcerequest"]);
  });

  test.each([
    ["shadowpods", /unknown controller\(s\) shadowpods; choose from/],
    [" , ", /--controllers is empty/],
  ])("%p is refused", (text, message) => {
    expect(() => parseControllers(text)).toThrow(CliError);
    expect(() => parseControllers(text)).toThrow(message);
  });
});

/** `liqo controller-manager` started with one more flag, against a kubeconfig that does not exist. */
const startWith = (flag: string) =>
  Bun.spawnSync(
    [
      process.execPath,
      join(import.meta.dir, "../../cli/liqo.ts"),
      "controller-manager",
      "--cluster-id=x",
      "--cluster-name=x",
      "--kubeconfig=/nonexistent",
      flag,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );

describe("liqo controller-manager --peer-pod-security", () => {
  test("a level that is not a Pod Security Standard fails at start, naming the choices", () => {
    const run = startWith("--peer-pod-security=root");
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.toString()).toContain(
      '--peer-pod-security "root" is not a Pod Security Standard; choose from privileged, baseline, restricted',
    );
  });
});

describe("liqo controller-manager --peer-quota and --peer-default-requests", () => {
  test("a mode that is not hard, soft or none fails at start, naming the choices", () => {
    const run = startWith("--peer-quota=strict");
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.toString()).toContain('--peer-quota "strict" is not a quota mode; choose from hard, soft, none');
  });

  test("hard by default, no default requests; both read when given", () => {
    expect(peerQuotaFlags({ "peer-quota": "hard", "peer-default-requests": "" })).toEqual({ mode: "hard" });
    expect(peerQuotaFlags({ "peer-quota": "soft", "peer-default-requests": "cpu=50m,memory=64Mi" })).toEqual({
      mode: "soft",
      defaultRequests: { cpu: "50m", memory: "64Mi" },
    });
  });

  test("malformed default requests fail at start, naming the flag and an example", () => {
    const run = startWith("--peer-default-requests=cpu=100m");
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.toString()).toContain(
      '--peer-default-requests "cpu=100m": give both, e.g. cpu=100m,memory=128Mi',
    );
  });
});

describe("liqo controller-manager --cluster-labels (Liqo's flag)", () => {
  test("k=v,k2=v2 as in Liqo; absent means the identity's labels", () => {
    expect(clusterLabelsFlag("topology.liqo.io/region=eu-west,provider=onprem")).toEqual({
      "topology.liqo.io/region": "eu-west",
      provider: "onprem",
    });
    expect(clusterLabelsFlag(undefined)).toBeUndefined();
  });

  test.each(["region", "bad key!=x"])("%p is refused, naming the flag", (text) => {
    expect(() => clusterLabelsFlag(text)).toThrow(CliError);
    expect(() => clusterLabelsFlag(text)).toThrow(/^--cluster-labels: /);
  });

  test("a bad value fails at start, before any controller runs", () => {
    const run = startWith("--cluster-labels=region");
    expect(run.stderr.toString()).toContain("--cluster-labels: ");
    expect(run.exitCode).toBe(2);
  });
});

describe("liqo controller-manager --clusterset-dns-address", () => {
  test("an address that is not host:port fails at start, naming the flag and an example", () => {
    const run = startWith("--clusterset-dns-address=5353");
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.toString()).toContain(
      '--clusterset-dns-address: "5353" is not host:port (e.g. 0.0.0.0:5353 or [::]:5353)',
    );
  });

  test("the chart passes it when clustersetDns is enabled (the default), on its port", () => {
    const values = readFileSync(join(import.meta.dir, "../../chart/values.yaml"), "utf8");
    expect(values).toMatch(/clustersetDns:\n\s+# [^\n]*\n\s+enabled: true\n\s+# [^\n]*\n\s+port: 5353/);
    const template = readFileSync(join(import.meta.dir, "../../chart/templates/controller-manager.yaml"), "utf8");
    expect(template).toContain('"--clusterset-dns-address" (printf "0.0.0.0:%d" (int $dns.port))');
  });
});
