// A throw-away network lab: namespaces named after this run (pid + random), torn down in
// afterAll and swept on the next run if a previous one crashed. Only namespaces created here are
// ever touched: cleanup kills the processes living in *those* namespaces, then deletes them.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createCommandRunner, type CommandRunner } from "../../netfabric/os/run.ts";
import { startWireguardGo, type WireguardGoDevice } from "../../netfabric/os/wireguard-go.ts";

const prefix = "lqnf-";
export const runner: CommandRunner = createCommandRunner();

export interface Lab {
  /** Short run id, also usable in interface names (≤ 15 chars). */
  readonly id: string;
  netns(role: string): Promise<string>;
  wireguard(ns: string, role: string): Promise<WireguardGoDevice>;
  /** Runs argv in `ns`, returns stdout; throws CommandError on failure. */
  sh(ns: string, argv: string[], stdin?: string): Promise<string>;
  /** Starts a long-running Bun script in `ns` and waits until it prints "ready". */
  serve(ns: string, script: string, args: string[]): Promise<void>;
  cleanup(): Promise<void>;
}

async function removeNamespace(name: string) {
  // Processes started in the namespace (wireguard-go, servers) would keep it alive.
  const pids = await runner.run(["ip", "netns", "pids", name]).catch(() => "");
  for (const pid of pids.split("\n").filter(Boolean)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  await runner.run(["ip", "netns", "del", name]).catch(() => undefined);
}

/** A zombie (killed, not yet reaped by its parent) counts as dead: it can never clean up. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

const list = (dir: string) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

/** Deletes namespaces (and the processes inside them) and WireGuard sockets left by runs whose
 * process is gone. Names carry the owning pid in base 36. */
export async function sweepStale() {
  for (const name of list("/var/run/netns")) {
    if (!name.startsWith(prefix)) continue;
    const pid = parseInt(name.slice(prefix.length).split("-")[0] ?? "", 36);
    if (Number.isFinite(pid) && !alive(pid)) await removeNamespace(name);
  }
  for (const name of list("/var/run/wireguard")) {
    const m = /^lq([0-9a-z]+)-[0-9a-z]+\.sock$/.exec(name);
    if (m && !alive(parseInt(m[1]!, 36))) rmSync(`/var/run/wireguard/${name}`, { force: true });
  }
}

export async function createLab(): Promise<Lab> {
  await sweepStale();
  const pidTag = process.pid.toString(36);
  const rand = Math.random().toString(36).slice(2, 5).padEnd(3, "0");
  const id = `${pidTag}${rand}`;
  const namespaces: string[] = [];
  const devices: WireguardGoDevice[] = [];
  const servers: Bun.Subprocess[] = [];
  return {
    id,
    async netns(role) {
      const name = `${prefix}${pidTag}-${rand}-${role}`;
      await runner.run(["ip", "netns", "add", name]);
      namespaces.push(name);
      await runner.run(["ip", "-n", name, "link", "set", "lo", "up"]);
      return name;
    },
    async wireguard(ns, role) {
      // lq<pid>-<rand><role>: at most 2+5+1+3+3 = 14 characters, under Linux's 15.
      const dev = await startWireguardGo({ name: `lq${pidTag}-${rand}${role.slice(0, 3)}`, netns: ns });
      devices.push(dev);
      return dev;
    },
    sh: (ns, argv, stdin) => runner.run(argv, { netns: ns, stdin }),
    async serve(ns, script, args) {
      const proc = Bun.spawn(["ip", "netns", "exec", ns, process.execPath, script, ...args], {
        stdout: "pipe",
        stderr: "inherit",
      });
      servers.push(proc);
      const reader = proc.stdout.getReader();
      let out = "";
      while (!out.includes("ready")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`${script} in ${ns} exited before it was ready (code ${await proc.exited})`);
        out += new TextDecoder().decode(value);
      }
      reader.releaseLock();
    },
    async cleanup() {
      for (const s of servers.splice(0)) {
        s.kill("SIGKILL");
        await s.exited;
      }
      for (const d of devices.splice(0)) await d.stop().catch(() => undefined);
      for (const ns of namespaces.splice(0).reverse()) await removeNamespace(ns);
    },
  };
}

/** Polls `check` until it returns a value other than undefined, or fails with what it waited for. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`,
      );
    await Bun.sleep(50);
  }
}
