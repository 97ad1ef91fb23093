// What every role command shares: flags parsing helpers, the admin server, waiting for a signal.
import { readFileSync, watch, type FSWatcher } from "node:fs";
import { CliError } from "../../cli/errors.ts";
import { createAdminApp, createReadiness, startAdminServer, type View } from "../admin/index.ts";
import type { Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";

export function hostPort(value: string, flag: string): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(value);
  if (!m || Number(m[2]) > 65535) throw new CliError(`--${flag} must be host:port, got ${value}`);
  return { host: m[1]!, port: Number(m[2]) };
}

/** k=v,k2=v2 (cluster labels, resources) into a map; an empty string is an empty map. */
export function keyValues(value: string | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq <= 0) throw new CliError(`--${flag}: "${part}" is not key=value`);
    out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

export async function serveAdmin(o: { address: string; registry: Registry; logger: Logger; views: Record<string, View>; checks: Record<string, () => boolean | { ok: boolean; reason?: string }> }) {
  const readiness = createReadiness();
  for (const [name, check] of Object.entries(o.checks)) readiness.add(name, check);
  const app = createAdminApp({ registry: o.registry, readiness, logger: o.logger, views: o.views });
  const { host, port } = hostPort(o.address, "admin-address");
  return startAdminServer({ app, host, port, logger: o.logger });
}

export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => resolve());
  });
}

/**
 * Calls `onChange` with a config file's text whenever it changes. Editors and `kubectl cp` write in
 * steps, so a change is read once the file settles; a periodic re-read catches what a watch misses
 * (a ConfigMap volume swaps a symlink). Returns a function that stops watching.
 */
export function watchConfigFile(path: string, onChange: (text: string) => void, intervalMs = 5000): () => void {
  let last = readFileSync(path, "utf8");
  let settle: ReturnType<typeof setTimeout> | undefined;
  const reload = () => {
    let text: string;
    try { text = readFileSync(path, "utf8"); } catch { return; }
    if (text === last) return;
    last = text;
    onChange(text);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(path, () => {
      clearTimeout(settle);
      settle = setTimeout(reload, 200);
    });
  } catch { /* the periodic re-read still works */ }
  const timer = setInterval(reload, intervalMs);
  return () => {
    clearTimeout(settle);
    clearInterval(timer);
    watcher?.close();
  };
}
