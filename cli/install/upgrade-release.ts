// The one way liqoctl installs or upgrades the liqo release with Helm (liqoctl install, liqoctl
// plugin allow|disallow): the values written to a file, `helm upgrade --install --wait --atomic`,
// so a failed or timed-out upgrade is rolled back and the release keeps the values it had.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliError, ExitCode } from "../errors.ts";
import { spinner } from "../ui.ts";
import { bundledChart } from "./chart-source.ts";
import { helmError, runHelm, type HelmTarget } from "./helm.ts";

export const RELEASE = "liqo";

export interface ReleaseUpgrade {
  helm: string;
  target: HelmTarget;
  /** The chart values, as YAML. */
  yaml: string;
  /** --set flags Helm applies over the values. */
  sets?: string[];
  /** A chart directory instead of the one built into liqoctl. */
  chartPath?: string;
  /** Whether the release exists (an upgrade, else an installation). */
  previous: boolean;
  timeoutMs: number;
  /** The timeout as the user gave it, for messages. */
  timeoutText: string;
  verbose?: boolean;
  /** Added to the success line, e.g. " (cluster rome)". */
  suffix?: string;
}

/** Runs Helm; throws a CliError with Helm's message (and that nothing changed) when it fails. */
export async function upgradeRelease(u: ReleaseUpgrade): Promise<void> {
  const chart = u.chartPath ? { dir: u.chartPath, embedded: false, cleanup() {} } : await bundledChart();
  const work = mkdtempSync(join(tmpdir(), "liqoctl-install-"));
  try {
    await Bun.write(join(work, "values.yaml"), u.yaml);
    const spin = spinner(
      `${u.previous ? "Upgrading" : "Installing"} liqo in namespace ${u.target.namespace} (Helm, timeout ${u.timeoutText})`,
    );
    const helmArgs = [
      "upgrade",
      "--install",
      RELEASE,
      chart.dir,
      "--create-namespace",
      "--values",
      join(work, "values.yaml"),
      ...(u.sets ?? []).flatMap((s) => ["--set", s]),
      "--wait",
      "--atomic",
      "--timeout",
      `${Math.ceil(u.timeoutMs / 1000)}s`,
      ...(u.verbose ? ["--debug"] : []),
    ];
    const r = await runHelm(u.helm, helmArgs, u.target, { verbose: u.verbose });
    if (r.code !== 0) {
      const msg = helmError(r);
      const timedOut = /context deadline exceeded|timed out waiting/i.test(msg);
      spin.fail(
        `liqo ${u.previous ? "upgrade" : "installation"} failed${timedOut ? ` (not ready within --timeout ${u.timeoutText}; Helm rolled it back)` : ""}`,
      );
      throw new CliError(
        `helm: ${msg}\n  ${u.previous ? "the release keeps the values it had; " : ""}check the pods: kubectl get pods -n ${u.target.namespace}; retry with --verbose`,
        ExitCode.Failure,
      );
    }
    spin.succeed(`liqo ${u.previous ? "upgraded" : "installed"} in namespace ${u.target.namespace}${u.suffix ?? ""}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
    chart.cleanup();
  }
}
