import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliError } from "../errors.ts";
import { upgradeRelease } from "./upgrade-release.ts";

// A stand-in for helm: it records its arguments and the values file it was given, then exits as told.
const dir = mkdtempSync(join(tmpdir(), "liqoctl-fake-helm-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fakeHelm(name: string, code: number, stderr: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh
echo "$@" > "${path}.args"
while [ $# -gt 0 ]; do [ "$1" = --values ] && cp "$2" "${path}.values"; shift; done
printf '%s\\n' '${stderr}' >&2
exit ${code}
`,
  );
  chmodSync(path, 0o755);
  return path;
}

const upgrade = (helm: string) =>
  upgradeRelease({
    helm,
    target: { namespace: "liqo", kubeconfig: "/k" },
    yaml: "clusterName: rome\nreflection:\n  grantPeerPlugins: true\n",
    chartPath: "/charts/liqo",
    previous: true,
    timeoutMs: 90_000,
    timeoutText: "90s",
  });

describe("upgradeRelease: helm upgrade of the liqo release", () => {
  test("runs helm upgrade --atomic --wait with the values given, against the target", async () => {
    const helm = fakeHelm("ok", 0, "");
    await upgrade(helm);
    expect(readFileSync(`${helm}.args`, "utf8").trim().split(" ")).toEqual([
      "upgrade",
      "--install",
      "liqo",
      "/charts/liqo",
      "--create-namespace",
      "--values",
      expect.stringMatching(/values\.yaml$/),
      "--wait",
      "--atomic",
      "--timeout",
      "90s",
      "--namespace",
      "liqo",
      "--kubeconfig",
      "/k",
    ]);
    expect(readFileSync(`${helm}.values`, "utf8")).toBe("clusterName: rome\nreflection:\n  grantPeerPlugins: true\n");
  });

  test("a failed upgrade is an error with Helm's message, saying the release keeps its values", async () => {
    const helm = fakeHelm("fails", 1, "Error: UPGRADE FAILED: the chart is broken");
    const err = await upgrade(helm).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).code).toBe(1);
    expect((err as CliError).message).toStartWith(
      "helm: Error: UPGRADE FAILED: the chart is broken\n  the release keeps the values it had; check the pods: kubectl get pods -n liqo",
    );
  });
});
