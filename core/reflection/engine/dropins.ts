// Drop-in plugins: every .wasm file in a directory is validated and loaded into the engine; a
// changed file is reloaded, a removed one unloaded, without a restart. A directory watch makes
// it quick; a periodic rescan makes it sure (ConfigMap volumes swap symlinks, which watches miss).
import { existsSync, readdirSync, readFileSync, watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { silentLogger, type Logger } from "../../log.ts";
import { validatePlugin } from "../validate.ts";
import type { ReflectionEngine } from "./engine.ts";

export interface DropinFileState {
  file: string;
  hash: string;
  plugin?: string;
  error?: string;
}

export interface DropinWatcher {
  /** Looks at the directory now; resolves when every change found is applied. */
  scan(): Promise<void>;
  files(): DropinFileState[];
  stop(): void;
}

export function watchPluginDir(
  engine: ReflectionEngine,
  dir: string,
  options: { logger?: Logger; intervalMs?: number } = {},
): DropinWatcher {
  const log = (options.logger ?? silentLogger).child({ component: "dropins", dir });
  const known = new Map<string, DropinFileState>();
  let scanning: Promise<void> | undefined;
  let again = false;
  let watcher: FSWatcher | undefined;

  async function scanOnce() {
    const present = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".wasm") && !f.startsWith(".")) : [];
    for (const [file, state] of known) {
      if (present.includes(file)) continue;
      known.delete(file);
      if (state.plugin) {
        await engine.removePlugin(state.plugin);
        log.info("drop-in plugin removed", { file, plugin: state.plugin });
      }
    }
    for (const file of present) {
      let bytes: Uint8Array;
      try {
        bytes = readFileSync(join(dir, file));
      } catch {
        continue; // removed between listing and reading; the next scan sees it gone
      }
      const hash = Bun.hash(bytes).toString(16);
      const previous = known.get(file);
      if (previous?.hash === hash) continue;
      const state: DropinFileState = { file, hash };
      known.set(file, state);
      const verdict = await validatePlugin(bytes);
      if (!verdict.ok) {
        state.error = verdict.problems.join("; ");
        log.warn("drop-in plugin rejected", { file, problems: verdict.problems });
        if (previous?.plugin) await engine.removePlugin(previous.plugin);
        continue;
      }
      try {
        if (previous?.plugin && previous.plugin !== verdict.manifest.name) await engine.removePlugin(previous.plugin);
        const info = await engine.addPlugin(bytes, { trust: "dropin", source: join(dir, file) });
        state.plugin = info.name;
      } catch (err) {
        state.error = (err as Error).message;
        log.warn("drop-in plugin not loaded", { file, err });
      }
    }
  }

  function scan(): Promise<void> {
    if (scanning) {
      again = true;
      return scanning;
    }
    scanning = (async () => {
      do {
        again = false;
        await scanOnce().catch((err) => log.error("plugin directory scan failed", { err }));
      } while (again);
    })().finally(() => {
      scanning = undefined;
    });
    return scanning;
  }

  try {
    watcher = watch(dir, () => void scan());
  } catch {
    log.warn("cannot watch the plugin directory; relying on periodic rescans");
  }
  const timer = setInterval(() => void scan(), options.intervalMs ?? 2000);
  void scan();
  return {
    scan,
    files: () => [...known.values()].map((s) => ({ ...s })),
    stop() {
      clearInterval(timer);
      watcher?.close();
    },
  };
}
