// Brings one reflection engine's drop-ins to a wanted list from the plugin store: a plugin no
// longer wanted (removed, or no longer granted by the provider) is stopped, a changed one
// reloaded, a new one loaded. Built-ins are left alone. The source string carries the module's
// hash, so the engine itself records which bytes it runs (and the admin API shows it).
import type { Logger } from "../../log.ts";
import type { ReflectionEngine } from "../engine/engine.ts";
import type { ReadyPlugin } from "./watch.ts";

const sourceOf = (p: ReadyPlugin, namespace: string) => `configmap:${namespace}/${p.configMap}#${p.hash}`;

export interface DropinSync {
  loaded: string[];
  stopped: string[];
  failed: { name: string; error: string }[];
}

export async function syncDropins(
  engine: ReflectionEngine,
  wanted: ReadyPlugin[],
  namespace: string,
  log: Logger,
  only: "removals" | "all" = "all",
): Promise<DropinSync> {
  const out: DropinSync = { loaded: [], stopped: [], failed: [] };
  const want = new Map(wanted.map((p) => [p.name, p]));
  for (const info of engine.plugins()) {
    if (info.trust !== "dropin" || !info.source.startsWith("configmap:")) continue;
    const w = want.get(info.name);
    if (w && sourceOf(w, namespace) === info.source) continue;
    if (w && only === "removals") continue; // a changed module is replaced below, not stopped early
    await engine.removePlugin(info.name);
    out.stopped.push(info.name);
    log.info("drop-in plugin stopped", { plugin: info.name, source: info.source });
  }
  if (only === "removals") return out;
  const running = new Map(engine.plugins().map((i) => [i.name, i.source]));
  for (const p of wanted) {
    if (running.get(p.name) === sourceOf(p, namespace)) continue;
    try {
      await engine.addPlugin(p.bytes, { trust: "dropin", source: sourceOf(p, namespace) });
      out.loaded.push(p.name);
      log.info("drop-in plugin loaded", { plugin: p.name, source: sourceOf(p, namespace) });
    } catch (err) {
      out.failed.push({ name: p.name, error: (err as Error).message });
      log.warn("drop-in plugin not loaded", { plugin: p.name, err });
    }
  }
  return out;
}
