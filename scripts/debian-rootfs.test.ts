// scripts/debian-rootfs.ts without debootstrap (tests/e2e/image.test.ts and release.test.ts build
// real ones): the cache keys, and the lock that keeps two processes from building one at once.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { debianRootfsKey, withLock } from "./debian-rootfs.ts";

test("the key names the packages, users and CPU; amd64's is what it was before arm64 existed", () => {
  const amd64 = debianRootfsKey(["procps", "curl"], [{ name: "bun", uid: 1000 }]);
  expect(debianRootfsKey(["curl", "procps"], [{ name: "bun", uid: 1000 }], "amd64")).toBe(amd64);
  expect(amd64).toBe(
    new Bun.CryptoHasher("sha256").update("bookworm minbase curl,procps users bun:1000").digest("hex").slice(0, 12),
  );
  expect(debianRootfsKey(["curl", "procps"], [{ name: "bun", uid: 1000 }], "arm64")).not.toBe(amd64);
  expect(debianRootfsKey(["curl"], [{ name: "bun", uid: 1000 }])).not.toBe(amd64);
});

test("withLock: a second holder waits for the first; a dead process's lock is taken over", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rootfs-lock-test-"));
  try {
    const lock = join(dir, "x.lock");
    const events: string[] = [];
    const said: string[] = [];
    const hold = (name: string, ms: number) =>
      withLock(
        lock,
        (m) => said.push(m),
        async () => {
          events.push(`${name} in`);
          await Bun.sleep(ms);
          events.push(`${name} out`);
        },
      );
    // Both in this process: the lock file holds this (live) pid, so the second waits.
    await Promise.all([hold("a", 2500), Bun.sleep(100).then(() => hold("b", 10))]);
    expect(events).toEqual(["a in", "a out", "b in", "b out"]);
    expect(said).toEqual([`another process (pid ${process.pid}) is building it; waiting (${lock})`]);
    expect(existsSync(lock)).toBe(false);

    // A lock left by a process that no longer exists.
    const gone = Bun.spawnSync(["true"]).pid;
    writeFileSync(lock, String(gone));
    let ran = false;
    await withLock(
      lock,
      () => {},
      async () => {
        ran = true;
      },
    );
    expect(ran).toBe(true);
    expect(existsSync(lock)).toBe(false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 20_000);
