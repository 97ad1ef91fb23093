// The one way liqoctl installs or upgrades the liqo release with Helm (liqoctl install, liqoctl
// plugin allow|disallow): the values written to a file, `helm upgrade --install --wait --atomic`,
// so a failed or timed-out upgrade is rolled back and the release keeps the values it had.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliError, ExitCode } from "../errors.ts";
import { spinner } from "../ui.ts";
import { bundledChart } from "./chart-source.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { helmError, runHelm, type HelmTarget } from "./helm.ts";
import { pullFailureMessage, watchPulls, type PullFailure } from "./pull-watch.ts";
import { chartAppVersion, installedAppVersion, refuseDowngrade, upgradeCrds } from "./crd-upgrade.ts";

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
  /**
   * The cluster: while Helm waits, its pods are watched, and an image they cannot pull stops the
   * install within PULL_GRACE_MS (Helm rolls it back), naming the pod, the image and the fix.
   */
  client?: KubeClient;
}

/** How long a pod's pull may keep failing before the install is stopped. */
export const PULL_GRACE_MS = 30_000;

async function applyChartCrds(client: KubeClient, chartDir: string): Promise<void> {
  const spin = spinner("Applying the chart's CRDs (Helm leaves them as first installed)");
  try {
    const done = await upgradeCrds(client, chartDir);
    const moved = done.migrated.map(
      (m) => `${m.crd}: ${m.rewritten} objects rewritten from ${m.from.join(", ")} to ${m.to}`,
    );
    const kept = done.kept.length ? `; left as installed (not liqo's): ${done.kept.join(", ")}` : "";
    spin.succeed(
      `${done.applied.length} CRDs applied and Established${kept}${moved.length ? `; stored versions migrated: ${moved.join("; ")}` : ""}`,
    );
  } catch (err) {
    spin.fail("the chart's CRDs could not be applied: the release was not upgraded");
    throw new CliError(`${(err as Error).message}\n  nothing else was changed`, ExitCode.Failure);
  }
}

/** Runs Helm; throws a CliError with Helm's message (and that nothing changed) when it fails. */
export async function upgradeRelease(u: ReleaseUpgrade): Promise<void> {
  const chart = u.chartPath ? { dir: u.chartPath, embedded: false, cleanup() {} } : await bundledChart();
  const work = mkdtempSync(join(tmpdir(), "liqoctl-install-"));
  try {
    if (u.previous) {
      refuseDowngrade(
        await installedAppVersion(u.helm, RELEASE, u.target),
        chartAppVersion(chart.dir),
        u.target.namespace,
      );
      // Helm never upgrades a chart's CRDs: they are applied here, before the new roles start.
      if (u.client) await applyChartCrds(u.client, chart.dir);
    }
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
    const stop = new AbortController();
    let pull: PullFailure | undefined;
    const watching = u.client
      ? watchPulls(u.client, u.target.namespace, {
          graceMs: PULL_GRACE_MS,
          intervalMs: 3000,
          signal: stop.signal,
          onFailure: (f) => {
            pull = f;
            stop.abort();
          },
        })
      : Promise.resolve();
    const r = await runHelm(u.helm, helmArgs, u.target, { verbose: u.verbose, signal: stop.signal }).finally(() =>
      stop.abort(),
    );
    await watching;
    if (pull) {
      spin.fail(
        `liqo ${u.previous ? "upgrade" : "installation"} stopped: an image cannot be pulled; Helm rolled it back`,
      );
      throw new CliError(
        `${pullFailureMessage(pull, u.target.namespace)}\n  ${u.previous ? "the release keeps the values it had" : "nothing stays installed"}`,
        ExitCode.Failure,
      );
    }
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
