import { createServer } from "node:net";
import { RigError } from "./errors.ts";

/** Asks the kernel for a free loopback port. Another process could take it before we bind it;
 * the components' health waits then fail with their log, which says so. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** Ports from a fixed base (stable kubeconfigs), each checked free; or kernel-chosen ones. */
export async function allocatePorts(count: number, base?: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    if (base === undefined) {
      let port: number;
      do port = await freePort();
      while (out.includes(port));
      out.push(port);
      continue;
    }
    const port = base + i;
    if (!(await portIsFree(port))) {
      throw new RigError(
        `port ${port} on 127.0.0.1 is taken; stop what uses it (ss -ltnp 'sport = :${port}') or pass another --base-port`,
      );
    }
    out.push(port);
  }
  return out;
}
