import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { join } from "node:path";
import { BULK_BYTES } from "./probes.ts";

const liqo = [process.execPath, join(import.meta.dir, "../../cli/liqo.ts"), "test-server"];

function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

async function readAll(port: number): Promise<number> {
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        data(_s, chunk) {
          total += chunk.length;
        },
        close: () => resolve(),
        error: (_s, err) => reject(err),
        connectError: (_s, err) => reject(err),
      },
    });
  });
  return total;
}

describe("liqo test-server (the server pods of liqoctl test network)", () => {
  test("serves the page naming its host, and BULK_BYTES then a close to each connection; stops on SIGTERM", async () => {
    const [http, bulk] = [freePort(), freePort()];
    const p = Bun.spawn([...liqo, `--http-port=${http}`, `--bulk-port=${bulk}`], { stdout: "pipe", stderr: "pipe" });
    try {
      let page = "";
      for (let i = 0; i < 100 && !page; i++) {
        page = await fetch(`http://127.0.0.1:${http}/any/path`)
          .then((r) => r.text())
          .catch(() => "");
        if (!page) await Bun.sleep(100);
      }
      expect(page).toBe(`Server name: ${hostname()}\n`);
      expect(await readAll(bulk)).toBe(BULK_BYTES);
      expect(await readAll(bulk)).toBe(BULK_BYTES);
    } finally {
      p.kill("SIGTERM");
    }
    expect(await p.exited).toBe(0);
  });

  test("bad flags are refused, naming the flag", async () => {
    for (const [flag, says] of [
      ["--http-port=70000", "--http-port: a port from 1 to 65535, got 70000"],
      ["--bulk-port=x", "--bulk-port: a port from 1 to 65535, got x"],
      ["--bulk-bytes=0", "--bulk-bytes: a whole number of bytes from 1 to 1 GiB, got 0"],
    ] as const) {
      const p = Bun.spawnSync([...liqo, flag], { stderr: "pipe" });
      expect(p.exitCode).not.toBe(0);
      expect(p.stderr.toString()).toContain(says);
    }
  });

  test("a port already taken: the error says it cannot listen", async () => {
    const taken = Bun.listen({ hostname: "0.0.0.0", port: 0, socket: { data() {} } });
    try {
      const p = Bun.spawnSync([...liqo, `--http-port=${freePort()}`, `--bulk-port=${taken.port}`], { stderr: "pipe" });
      expect(p.exitCode).not.toBe(0);
      expect(p.stderr.toString()).toContain("test-server: cannot listen");
    } finally {
      taken.stop(true);
    }
  });
});
