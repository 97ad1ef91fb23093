// The rig's registry without a rig: the real distribution registry (docker-registry) on loopback,
// with a storage of its own, and the push protocol of oci-push.ts against it. A push reads back by
// tag and by digest, a second push sends only HEADs, and a bad archive is named in the error.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeLayer, writeOciArchive } from "../../scripts/oci-archive.ts";
import { normalizeRef } from "./images.ts";
import { mirrorRepository, pushArchive } from "./oci-push.ts";
import { freePort } from "./ports.ts";
import {
  hostsDirName,
  mirroredHosts,
  mirrorHostsToml,
  type RegistryState,
  registryConfig,
  registryUrl,
  startRegistry,
  stopRegistry,
  writeMirrorHosts,
} from "./registry.ts";
import { waitFor } from "../support/wait.ts";
import { isAlive } from "./process.ts";

const tmp = mkdtempSync(join(tmpdir(), "rig-registry-"));
const ref = "ghcr.io/liqo-bun/registry-test:1";
let registry: RegistryState;
let archive: string;
let base: string;

/** fetch that records each request's method and path, to see what a push sent. */
function recording() {
  const calls: string[] = [];
  const f = (async (input: string | URL | Request, init?: RequestInit) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  }) as typeof fetch;
  return { calls, fetch: f };
}

beforeAll(async () => {
  const stage = join(tmp, "stage");
  mkdirSync(stage);
  writeFileSync(join(stage, "hello.txt"), "from the rig's registry test\n");
  const layer = await makeLayer(stage, join(tmp, "layer.tar.gz"), { comment: "hello.txt" });
  archive = join(tmp, "image.oci.tar");
  await writeOciArchive({
    out: archive,
    work: join(tmp, "work"),
    ref,
    layers: [layer],
    config: { user: "0:0", workingDir: "/", entrypoint: ["/bin/true"], env: [], labels: {} },
  });
  const address = `127.0.0.1:${await freePort()}`;
  const dir = join(tmp, "registry");
  mkdirSync(dir);
  registry = {
    address,
    dir,
    hostsDir: join(dir, "hosts"),
    storage: join(tmp, "storage"),
    log: join(dir, "log"),
    pid: 0,
  };
  writeFileSync(join(dir, "config.yml"), registryConfig(address, registry.storage));
  await startRegistry(registry);
  base = registryUrl(registry);
}, 60_000);

afterAll(async () => {
  if (registry?.pid) await stopRegistry(registry);
  rmSync(tmp, { recursive: true, force: true });
});

const accept = "application/vnd.oci.image.manifest.v1+json";

describe("pushing an OCI archive to the registry", () => {
  test("the image reads back by tag and by digest, with every blob", async () => {
    const report = await pushArchive({ archive, registry: base });
    expect(report.names).toEqual([ref]);
    expect(report.uploaded.length).toBe(2); // the config and the layer
    expect(report.tagged).toEqual([ref]);
    const byTag = await fetch(`${base}/v2/ghcr.io/liqo-bun/registry-test/manifests/1`, { headers: { accept } });
    expect(byTag.status).toBe(200);
    expect(byTag.headers.get("docker-content-digest")).toBe(report.digest);
    const manifest = (await byTag.json()) as {
      config: { digest: string; size: number };
      layers: { digest: string; size: number }[];
    };
    const byDigest = await fetch(`${base}/v2/ghcr.io/liqo-bun/registry-test/manifests/${report.digest}`, {
      headers: { accept },
    });
    expect(await byDigest.json()).toEqual(manifest);
    for (const b of [manifest.config, ...manifest.layers]) {
      const blob = await fetch(`${base}/v2/ghcr.io/liqo-bun/registry-test/blobs/${b.digest}`);
      expect(blob.status).toBe(200);
      const bytes = new Uint8Array(await blob.arrayBuffer());
      expect(bytes.length).toBe(b.size);
      expect(`sha256:${new Bun.CryptoHasher("sha256").update(bytes).digest("hex")}`).toBe(b.digest);
    }
  });

  test("pushing again sends only HEADs: every blob and the tag are there", async () => {
    const r = recording();
    const report = await pushArchive({ archive, registry: base, fetch: r.fetch });
    expect(report.uploaded).toEqual([]);
    expect(report.tagged).toEqual([]);
    expect(report.present.length).toBe(2);
    expect(r.calls.length).toBe(3);
    expect(r.calls.every((c) => c.startsWith("HEAD "))).toBe(true);
  });

  test("a second name mounts the blobs from the first repository instead of uploading them", async () => {
    const alias = normalizeRef("nginx");
    const r = recording();
    const report = await pushArchive({ archive, registry: base, names: [ref, alias], fetch: r.fetch });
    expect(report.uploaded).toEqual([]);
    expect(report.mounted.length).toBe(2);
    expect(report.tagged).toEqual([alias]);
    expect(r.calls.filter((c) => c.startsWith("PUT ")).map((c) => c.split(" ")[1])).toEqual([
      "/v2/docker.io/library/nginx/manifests/latest",
    ]);
    const res = await fetch(`${base}/v2/docker.io/library/nginx/manifests/latest`, {
      method: "HEAD",
      headers: { accept },
    });
    expect(res.headers.get("docker-content-digest")).toBe(report.digest);
  });

  test("a file that is not a tar archive is named in the error", async () => {
    const bad = join(tmp, "not-a-tar.oci.tar");
    writeFileSync(bad, "x".repeat(2048));
    await expect(pushArchive({ archive: bad, registry: base })).rejects.toThrow(`${bad} is not a tar archive`);
  });

  test("a tar without an OCI layout, or with a blob missing, is named in the error", async () => {
    const dir = join(tmp, "bad");
    mkdirSync(dir);
    writeFileSync(join(dir, "hello.txt"), "hi\n");
    const plain = join(tmp, "plain.tar");
    expect(Bun.spawnSync(["tar", "-C", dir, "-cf", plain, "hello.txt"]).exitCode).toBe(0);
    await expect(pushArchive({ archive: plain, registry: base })).rejects.toThrow(
      `${plain} is not an OCI image archive (no index.json)`,
    );
    // The real archive without its layer blob.
    const partial = join(tmp, "partial.tar");
    const x = join(tmp, "x");
    mkdirSync(x);
    expect(Bun.spawnSync(["tar", "-C", x, "-xf", archive]).exitCode).toBe(0);
    const index = JSON.parse(await Bun.file(join(x, "index.json")).text());
    const manifest = JSON.parse(await Bun.file(join(x, "blobs/sha256", index.manifests[0].digest.slice(7))).text());
    const layer = manifest.layers[0].digest.slice(7);
    rmSync(join(x, "blobs/sha256", layer));
    expect(Bun.spawnSync(["tar", "-C", x, "-cf", partial, "."]).exitCode).toBe(0);
    await expect(
      pushArchive({ archive: partial, registry: base, names: ["ghcr.io/liqo-bun/partial:1"] }),
    ).rejects.toThrow(`${partial} lacks blobs/sha256/${layer}`);
  });

  test("a missing file and an unreachable registry say so", async () => {
    await expect(pushArchive({ archive: join(tmp, "nope.tar"), registry: base })).rejects.toThrow(
      "nope.tar: no such file",
    );
    const closed = `http://127.0.0.1:${await freePort()}`;
    await expect(pushArchive({ archive, registry: closed })).rejects.toThrow(`cannot reach the registry at ${closed}`);
  });
});

describe("the registry's process and the nodes' mirror configuration", () => {
  test("every registry the rig's images name is mirrored, each under its own namespace", () => {
    expect(mirroredHosts()).toEqual(["docker.io", "ghcr.io", "registry.k8s.io"]);
    expect(mirrorHostsToml("172.31.0.1:5001", "docker.io")).toContain(
      'server = "http://172.31.0.1:5001/v2/docker.io"\noverride_path = true\ncapabilities = ["pull", "resolve"]',
    );
    expect(mirrorHostsToml("172.31.0.1:5001", "docker.io")).toMatch(/^\[host\]$/m);
    expect(mirrorRepository("docker.io/library/nginx:latest")).toEqual({
      host: "docker.io",
      repository: "docker.io/library/nginx",
      reference: "latest",
    });
    expect(mirrorRepository("localhost:5000/app@sha256:abc").repository).toBe("localhost-5000/app");
    expect(mirrorHostsToml("172.31.0.1:5001", "localhost:5000")).toContain("/v2/localhost-5000");
    expect(hostsDirName("localhost:5000")).toBe("localhost_5000_");
  });

  test("containerd pulls docker.io/library/nginx:latest from it through the hosts.toml the nodes get", async () => {
    // ctr reads a hosts directory as the nodes' CRI does (config_path): one parser, containerd 1.6's.
    writeMirrorHosts(registry, ["docker.io"]);
    const dir = join(tmp, "containerd");
    const socket = join(dir, "sock");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "config.toml"),
      `version = 2\nroot = "${dir}/root"\nstate = "${dir}/state"\n[grpc]\n  address = "${socket}"\n`,
    );
    const containerd = Bun.spawn(["containerd", "--config", join(dir, "config.toml")], {
      stdout: "ignore",
      stderr: "ignore",
    });
    const ctr = (...args: string[]) => {
      const p = Bun.spawnSync(["ctr", "--address", socket, "-n", "k8s.io", ...args], { stderr: "pipe" });
      return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
    };
    try {
      await waitFor("containerd's socket", () => ctr("version").code === 0, { timeoutMs: 30_000 });
      await pushArchive({ archive, registry: base, names: ["docker.io/library/nginx:latest"] });
      const pull = ctr("images", "pull", "--hosts-dir", registry.hostsDir, "docker.io/library/nginx:latest");
      // ctr's progress display logs "failed to get content info … context canceled" when it stops
      // polling a finished pull: harmless. Any other failure (the mirror refused, a fallback to
      // docker.io) is not.
      const failures = pull.err.split("\n").filter((l) => l.includes("failed") && !l.includes("context canceled"));
      expect(failures).toEqual([]);
      expect(pull.code).toBe(0);
      expect(ctr("images", "ls", "-q").out).toContain("docker.io/library/nginx:latest");
    } finally {
      containerd.kill();
      await containerd.exited;
      Bun.spawnSync(["umount", "-R", join(dir, "root")], { stderr: "ignore" });
    }
  }, 60_000);

  test("stopped, it stops answering; started again, it serves what it stored", async () => {
    const pid = registry.pid;
    await stopRegistry(registry);
    expect(isAlive(pid)).toBe(false);
    await expect(pushArchive({ archive, registry: base })).rejects.toThrow(`cannot reach the registry at ${base}`);
    await startRegistry(registry);
    const report = await pushArchive({ archive, registry: base });
    expect(report.uploaded).toEqual([]);
  });
});
