// Starts and stops a userspace wireguard-go device. Run in the foreground (-f) so the process is
// our child: we know its pid, and stopping it removes the interface and the UAPI socket.
import { existsSync, rmSync } from "node:fs";
import { CommandError } from "./errors.ts";
import { socketPathOf } from "./wireguard-uapi.ts";

export interface WireguardGoDevice {
  readonly name: string;
  readonly pid: number;
  readonly socketPath: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  name: string;
  netns?: string;
  /** How long to wait for the UAPI socket. */
  timeoutMs?: number;
  binary?: string;
  /** Kill the device when this process dies (setpriv --pdeathsig), so a crashed gateway leaves no
   * orphan holding the port and the interface; a standby can then take over cleanly. */
  dieWithParent?: boolean;
}

export async function startWireguardGo(options: StartOptions): Promise<WireguardGoDevice> {
  if (options.name.length > 15)
    throw new TypeError(`interface name "${options.name}" is longer than 15 characters; Linux refuses it`);
  const argv = [
    ...(options.dieWithParent ? ["setpriv", "--pdeathsig", "KILL"] : []),
    options.binary ?? "wireguard-go",
    "-f",
    options.name,
  ];
  const full = options.netns ? ["ip", "netns", "exec", options.netns, ...argv] : argv;
  const socketPath = socketPathOf(options.name);
  // A socket left by a killed device would pass the readiness check below before the new one listens.
  if (existsSync(socketPath)) rmSync(socketPath, { force: true });
  const proc = Bun.spawn(full, { stdout: "ignore", stderr: "pipe", env: { ...process.env, LOG_LEVEL: "error" } });
  const deadline = Date.now() + (options.timeoutMs ?? 5000);
  while (!existsSync(socketPath)) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill();
      await proc.exited;
      const stderr = await new Response(proc.stderr).text();
      throw new CommandError(
        full,
        proc.exitCode ?? -1,
        stderr || `no UAPI socket at ${socketPath} after ${options.timeoutMs ?? 5000} ms`,
        options.netns,
      );
    }
    await Bun.sleep(10); // polling the socket's appearance, bounded by the deadline above
  }
  return {
    name: options.name,
    pid: proc.pid,
    socketPath,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      // A killed device normally removes its socket; a crashed one may not.
      if (existsSync(socketPath)) rmSync(socketPath, { force: true });
    },
  };
}
