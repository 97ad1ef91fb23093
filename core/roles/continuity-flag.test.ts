// --service-continuity-threshold on the two roles that take it, and the chart value behind it:
// nonsense fails at start, naming the option and the form it takes (the chart's schema refuses it
// too: tests/e2e/cli.test.ts).
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import controllerManager from "./controller-manager.ts";
import { continuityThresholdFlag } from "./shared.ts";

const liqo = (role: string, ...flags: string[]) =>
  Bun.spawnSync([process.execPath, join(import.meta.dir, "../../cli/liqo.ts"), role, "--cluster-id=x", ...flags], {
    stdout: "pipe",
    stderr: "pipe",
  });
const controllerManagerWith = (flag: string) =>
  liqo("controller-manager", "--cluster-name=x", "--kubeconfig=/nonexistent", flag);

describe("--service-continuity-threshold", () => {
  test("the default is 15s, as the chart's", async () => {
    const args = await (typeof controllerManager.args === "function"
      ? controllerManager.args()
      : controllerManager.args);
    expect(continuityThresholdFlag(args!["service-continuity-threshold"].default!)).toBe(15_000);
    const values = await Bun.file(join(import.meta.dir, "../../chart/values.yaml")).text();
    expect(values).toMatch(/^ {2}serviceContinuityThreshold: 15s$/m);
  });

  test("controller-manager: nonsense fails at start, naming the flag and the form", () => {
    const run = controllerManagerWith("--service-continuity-threshold=soon");
    expect(run.stderr.toString()).toContain(
      '--service-continuity-threshold "soon" is not a duration; write it like 15s, 500ms or 1m',
    );
    expect(run.exitCode).not.toBe(0);
  });

  test("controller-manager: zero fails at start", () => {
    const run = controllerManagerWith("--service-continuity-threshold=0s");
    expect(run.stderr.toString()).toContain('--service-continuity-threshold "0s" is shorter than 1s');
    expect(run.exitCode).not.toBe(0);
  });

  test("virtual-kubelet: nonsense fails at start too", () => {
    const run = liqo(
      "virtual-kubelet",
      "--remote-cluster-id=y",
      "--remote-cluster-name=y",
      "--remote-kubeconfig=/nonexistent",
      "--kubelet-cert=/nonexistent",
      "--kubelet-key=/nonexistent",
      "--client-ca=/nonexistent",
      "--service-continuity-threshold=-3s",
    );
    expect(run.stderr.toString()).toContain('--service-continuity-threshold "-3s" is not a duration');
    expect(run.exitCode).not.toBe(0);
  });
});
