// Finding and running the helm binary: liqoctl delegates installing, upgrading, rolling back and
// uninstalling to Helm 3, as Liqo's liqoctl does (it links Helm's Go library; we spawn the CLI).
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CliError, ExitCode } from "../errors.ts";

/** helm from LIQO_HELM, PATH, or the test rig's cache (~/.cache/liqo-bun/rig/<versions>/bin). */
export function findHelm(env: Record<string, string | undefined> = process.env): string {
  if (env.LIQO_HELM) {
    if (!existsSync(env.LIQO_HELM))
      throw new CliError(
        `LIQO_HELM=${env.LIQO_HELM}: no such file; point it at a helm 3 binary or unset it`,
        ExitCode.Failure,
      );
    return env.LIQO_HELM;
  }
  const onPath = Bun.which("helm", { PATH: env.PATH ?? "" });
  if (onPath) return onPath;
  const rigCache = env.LIQO_RIG_CACHE ?? join(homedir(), ".cache/liqo-bun/rig");
  if (existsSync(rigCache)) {
    for (const v of readdirSync(rigCache).sort().reverse()) {
      const candidate = join(rigCache, v, "bin/helm");
      if (existsSync(candidate)) return candidate;
    }
  }
  throw new CliError(
    "helm not found: liqoctl installs liqo with Helm 3; install it (https://helm.sh/docs/intro/install/) and put it on PATH, or set LIQO_HELM=/path/to/helm",
    ExitCode.Failure,
  );
}

export interface HelmTarget {
  kubeconfig?: string;
  context?: string;
  namespace: string;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm against the target cluster; output is captured (and echoed with verbose). */
export async function runHelm(
  helm: string,
  args: string[],
  target: HelmTarget,
  o: { verbose?: boolean; signal?: AbortSignal } = {},
): Promise<HelmResult> {
  const full = [...args, "--namespace", target.namespace];
  if (target.kubeconfig) full.push("--kubeconfig", target.kubeconfig);
  if (target.context) full.push("--kube-context", target.context);
  if (o.verbose) process.stderr.write(` DEBUG helm ${full.join(" ")}\n`);
  const proc = Bun.spawn([helm, ...full], { stdout: "pipe", stderr: "pipe", env: process.env });
  // Helm cancels on SIGTERM, and an --atomic install or upgrade then rolls itself back.
  o.signal?.addEventListener("abort", () => proc.kill("SIGTERM"), { once: true });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (o.verbose && stdout) process.stderr.write(stdout);
  if (o.verbose && stderr) process.stderr.write(stderr);
  return { code, stdout, stderr };
}

/** The release's status ("deployed", "failed", ...) or undefined when there is no such release. */
export async function releaseStatus(helm: string, release: string, target: HelmTarget): Promise<string | undefined> {
  const r = await runHelm(helm, ["status", release, "--output", "json"], target);
  if (r.code !== 0) return undefined;
  try {
    return (JSON.parse(r.stdout) as { info?: { status?: string } }).info?.status;
  } catch {
    return undefined;
  }
}

/** The values the release was installed or last upgraded with (user-supplied: generated and --set), as JSON. */
export async function releaseValues(
  helm: string,
  release: string,
  target: HelmTarget,
): Promise<Record<string, unknown>> {
  const r = await runHelm(helm, ["get", "values", release, "--output", "json"], target);
  if (r.code !== 0)
    throw new CliError(
      `cannot read the values of the liqo release: helm get values ${release}: ${helmError(r)}`,
      ExitCode.Failure,
    );
  const parsed = JSON.parse(r.stdout || "null") as Record<string, unknown> | null;
  return parsed ?? {};
}

/** Helm's own message without its debug prefixes, for one-line errors. */
export function helmError(r: HelmResult): string {
  return (r.stderr || r.stdout)
    .split("\n")
    .filter((l) => l.trim() && !/^\s*(install|upgrade|helm)\.go:\d+/.test(l))
    .join("\n")
    .trim();
}
