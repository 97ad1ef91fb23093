// What an upgrade does besides `helm upgrade`. Helm installs a chart's crds/ only when the release is
// first installed and never changes them afterwards, so liqoctl applies the chart's CRDs itself
// (server-side apply, field manager "liqoctl") before Helm rolls the roles, and then migrates the
// objects of any CRD whose storage version moved. It also refuses to install an older liqo over a
// newer one: the older roles may not read what the newer ones stored.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { installCrds, migrateStoredVersions, type StoredVersionMigration } from "../../core/apis/crds.ts";
import type { CustomResourceDefinition } from "../../core/apis/define.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources } from "../../core/kube/resources.ts";
import { CliError, ExitCode } from "../errors.ts";
import { runHelm, type HelmTarget } from "./helm.ts";

export const CRD_UPGRADE_FIELD_MANAGER = "liqoctl";

/** The CRDs in a chart's crds/ directory (one or more YAML documents per file). */
export function chartCrds(chartDir: string): CustomResourceDefinition[] {
  const dir = join(chartDir, "crds");
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
  } catch {
    return [];
  }
  const out: CustomResourceDefinition[] = [];
  for (const f of files.sort()) {
    for (const doc of readFileSync(join(dir, f), "utf8").split(/^---\s*$/m)) {
      if (!doc.trim()) continue;
      const crd = Bun.YAML.parse(doc) as CustomResourceDefinition | null;
      if (crd?.kind !== "CustomResourceDefinition")
        throw new CliError(
          `${join(dir, f)} holds a ${crd?.kind ?? "document"} where a CustomResourceDefinition was expected`,
        );
      out.push(crd);
    }
  }
  return out;
}

export interface CrdUpgrade {
  applied: string[];
  /** CRDs of other projects' groups already in the cluster (the MCS API's): left as they are. */
  kept: string[];
  migrated: StoredVersionMigration[];
}

/** liqo's own API groups (*.liqo.io): liqoctl owns their CRDs and applies them on every upgrade. */
export const isLiqoGroup = (group: string) => group === "liqo.io" || group.endsWith(".liqo.io");

/**
 * Applies the chart's CRDs, waits until each is Established, then migrates stored versions. A CRD
 * of another project's group (the MCS API's ServiceExport and ServiceImport, which another
 * implementation may have installed) is created when absent and otherwise left to its owner, as
 * Helm's crds/ would.
 */
export async function upgradeCrds(client: KubeClient, chartDir: string): Promise<CrdUpgrade> {
  const kept: string[] = [];
  const crds: CustomResourceDefinition[] = [];
  for (const crd of chartCrds(chartDir)) {
    if (!isLiqoGroup(crd.spec.group) && (await client.find(Resources.customResourceDefinitions, crd.metadata.name)))
      kept.push(crd.metadata.name);
    else crds.push(crd);
  }
  const applied = await installCrds(client, { crds, fieldManager: CRD_UPGRADE_FIELD_MANAGER, timeoutMs: 120_000 });
  const migrated: StoredVersionMigration[] = [];
  for (const crd of crds) {
    if (!isLiqoGroup(crd.spec.group)) continue;
    const m = await migrateStoredVersions(client, crd.metadata.name);
    if (m) migrated.push(m);
  }
  return { applied, kept, migrated };
}

/** The chart's appVersion (the liqo version it installs); undefined when Chart.yaml cannot be read. */
export function chartAppVersion(chartDir: string): string | undefined {
  let chart: { appVersion?: unknown } | null;
  try {
    chart = Bun.YAML.parse(readFileSync(join(chartDir, "Chart.yaml"), "utf8")) as { appVersion?: unknown } | null;
  } catch {
    return undefined;
  }
  return chart?.appVersion === undefined ? undefined : String(chart.appVersion);
}

/** The appVersion of the installed release, from `helm list` (undefined when it cannot be read). */
export async function installedAppVersion(
  helm: string,
  release: string,
  target: HelmTarget,
): Promise<string | undefined> {
  const r = await runHelm(helm, ["list", "--filter", `^${release}$`, "--output", "json"], target);
  if (r.code !== 0) return undefined;
  try {
    const rows = JSON.parse(r.stdout || "[]") as { name?: string; app_version?: string }[];
    return rows.find((x) => x.name === release)?.app_version || undefined;
  } catch {
    return undefined;
  }
}

const semverish = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

/**
 * Why installing `next` over `installed` is refused: only when both are versions and `next` is
 * older. A version that is not semver (a custom build) is not compared.
 */
export function downgradeProblem(
  installed: string | undefined,
  next: string | undefined,
  namespace: string,
): string | undefined {
  if (!installed || !next || !semverish.test(installed) || !semverish.test(next)) return undefined;
  if (Bun.semver.order(next, installed) >= 0) return undefined;
  return (
    `liqo ${installed} is installed in namespace ${namespace} and this liqoctl installs ${next}, an older version: ` +
    `downgrades are refused (older roles may not read what ${installed} stored, and its CRDs would replace newer ones); ` +
    `nothing was changed. Use liqoctl ${installed} or newer, or return to the revision before an upgrade with ` +
    `helm rollback liqo -n ${namespace} (docs/upgrade.md)`
  );
}

export function refuseDowngrade(installed: string | undefined, next: string | undefined, namespace: string): void {
  const problem = downgradeProblem(installed, next, namespace);
  if (problem) throw new CliError(problem, ExitCode.Failure);
}
