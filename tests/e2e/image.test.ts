// The liqo image built without a container engine (scripts/build-image.ts): the archive is a valid
// OCI image layout (every digest and size checked here and by skopeo, an independent reader), and
// the unpacked layers run: the image's entrypoint as its user, in its working dir, chrooted into
// its root file system, answers `--version`, and `liqo auth` serves against a rig cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildImage, dockerfileRuntime, type BuiltImage } from "../../scripts/build-image.ts";
import { MEDIA } from "../../scripts/oci-archive.ts";
import { Resources } from "../../core/kube/resources.ts";
import { freePort } from "../rig/ports.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

const tmp = mkdtempSync(join(tmpdir(), "liqo-image-test-"));
const layout = join(tmp, "layout");
const rootfs = join(tmp, "rootfs");
let image: BuiltImage;
let rig: TestRig;
type Descriptor = { mediaType: string; digest: string; size: number; annotations?: Record<string, string> };
interface ImageCfg {
  config: { User: string; WorkingDir: string; Entrypoint: string[]; Env: string[] };
  rootfs: { type: string; diff_ids: string[] };
  architecture: string;
  os: string;
}

async function sh(cmd: string[], input?: string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(cmd, {
    stdout: "pipe",
    stderr: "pipe",
    stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
  });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

const sha256 = (bytes: Uint8Array) => `sha256:${new Bun.CryptoHasher("sha256").update(bytes).digest("hex")}`;
const blobPath = (dir: string, digest: string) => join(dir, "blobs/sha256", digest.replace(/^sha256:/, ""));

/** Every inconsistency of an unpacked OCI layout, named; empty when valid. */
function checkLayout(dir: string, o: { layers?: boolean } = {}): string[] {
  const problems: string[] = [];
  const blob = (d: Descriptor, what: string): Uint8Array | undefined => {
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(readFileSync(blobPath(dir, d.digest)));
    } catch {
      problems.push(`${what} ${d.digest}: no such blob`);
      return undefined;
    }
    if (bytes.length !== d.size) problems.push(`${what} ${d.digest}: size ${bytes.length}, descriptor says ${d.size}`);
    if (sha256(bytes) !== d.digest) problems.push(`${what} ${d.digest}: content hashes to ${sha256(bytes)}`);
    return bytes;
  };
  const ociLayout = JSON.parse(readFileSync(join(dir, "oci-layout"), "utf8"));
  if (ociLayout.imageLayoutVersion !== "1.0.0")
    problems.push(`oci-layout: imageLayoutVersion ${ociLayout.imageLayoutVersion}`);
  const index = JSON.parse(readFileSync(join(dir, "index.json"), "utf8"));
  if (index.schemaVersion !== 2 || index.mediaType !== MEDIA.index)
    problems.push(`index.json: schemaVersion ${index.schemaVersion}, mediaType ${index.mediaType}`);
  for (const m of index.manifests as Descriptor[]) {
    if (m.mediaType !== MEDIA.manifest) problems.push(`index.json: manifest mediaType ${m.mediaType}`);
    const bytes = blob(m, "manifest");
    if (!bytes) continue;
    const manifest = JSON.parse(new TextDecoder().decode(bytes));
    if (manifest.config.mediaType !== MEDIA.config) problems.push(`config mediaType ${manifest.config.mediaType}`);
    const cfgBytes = blob(manifest.config, "config");
    const cfg = cfgBytes ? (JSON.parse(new TextDecoder().decode(cfgBytes)) as ImageCfg) : undefined;
    if (o.layers !== false)
      (manifest.layers as Descriptor[]).forEach((l, i) => {
        if (l.mediaType !== MEDIA.layer) problems.push(`layer ${i}: mediaType ${l.mediaType}`);
        const gz = blob(l, `layer ${i}`);
        if (gz && cfg && sha256(Bun.gunzipSync(gz as Uint8Array<ArrayBuffer>)) !== cfg.rootfs.diff_ids[i])
          problems.push(`layer ${i}: uncompressed digest differs from the config's diff_ids[${i}]`);
      });
    if (cfg && cfg.rootfs.diff_ids.length !== manifest.layers.length)
      problems.push(`config: ${cfg.rootfs.diff_ids.length} diff_ids for ${manifest.layers.length} layers`);
  }
  return problems;
}

beforeAll(async () => {
  // The rig starts while the image builds (the Debian root file system is cached after the first run).
  const rigStarting = startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  image = await buildImage({ progress: (m) => console.error(`[build-image] ${m}`) });
  rig = await rigStarting;
  mkdirSync(layout);
  expect((await sh(["tar", "-C", layout, "-xf", image.path])).code).toBe(0);
}, 900_000);

afterAll(async () => {
  await rig?.down();
  rmSync(tmp, { recursive: true, force: true });
});

describe("the OCI archive", () => {
  test("is a valid OCI image layout: digests, sizes, media types, diff_ids", () => {
    expect(checkLayout(layout)).toEqual([]);
    const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8"));
    expect(index.manifests[0].annotations["io.containerd.image.name"]).toBe(image.ref);
    const docker = JSON.parse(readFileSync(join(layout, "manifest.json"), "utf8"));
    expect(docker[0].RepoTags).toEqual([image.ref]);
    expect(image.layers.length).toBe(4);
  });

  test("a corrupted blob is found (the check can fail)", () => {
    const bad = join(tmp, "bad");
    mkdirSync(join(bad, "blobs/sha256"), { recursive: true });
    for (const f of ["oci-layout", "index.json"]) copyFileSync(join(layout, f), join(bad, f));
    const index = JSON.parse(readFileSync(join(bad, "index.json"), "utf8"));
    const manifest = JSON.parse(readFileSync(blobPath(layout, index.manifests[0].digest), "utf8"));
    copyFileSync(blobPath(layout, index.manifests[0].digest), blobPath(bad, index.manifests[0].digest));
    const path = blobPath(bad, manifest.config.digest);
    writeFileSync(
      path,
      readFileSync(blobPath(layout, manifest.config.digest), "utf8").replace('"User":"1000"', '"User":"0000"'),
    );
    expect(checkLayout(bad, { layers: false })).toEqual([
      `config ${manifest.config.digest}: content hashes to ${sha256(new Uint8Array(readFileSync(path)))}`,
    ]);
    rmSync(bad, { recursive: true, force: true });
  });

  test("skopeo reads it: the Dockerfile's entrypoint, user and working dir", async () => {
    const r = await sh(["skopeo", "inspect", "--config", `oci-archive:${image.path}`]);
    expect(r.err).toBe("");
    const cfg = JSON.parse(r.out) as ImageCfg;
    const docker = dockerfileRuntime();
    expect(cfg.config.Entrypoint).toEqual(docker.entrypoint);
    expect(cfg.config.User).toBe(docker.user);
    expect(cfg.config.WorkingDir).toBe(docker.workingDir);
    expect(cfg.os).toBe("linux");
  });

  // What a push does, into a local directory: skopeo checks every blob's digest while copying.
  test("skopeo copies it, blob by blob, keeping the manifest's digest", async () => {
    const dest = join(tmp, "copied");
    const r = await sh(["skopeo", "copy", "-q", `oci-archive:${image.path}`, `dir:${dest}`]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(sha256(new Uint8Array(readFileSync(join(dest, "manifest.json"))))).toBe(image.manifest);
    for (const l of image.layers) expect(readFileSync(join(dest, l.digest.slice(7))).length).toBe(l.size);
    rmSync(dest, { recursive: true, force: true });
  });

  test("a Dockerfile without the runtime's apt-get step is refused with the fix", () => {
    expect(() => dockerfileRuntime("FROM oven/bun:1.4.5-debian\nUSER 1000\n")).toThrow(
      "the runtime stage has no `apt-get install -y --no-install-recommends <packages>` step",
    );
  });
});

describe("the unpacked image", () => {
  let cfg: ImageCfg;
  beforeAll(async () => {
    mkdirSync(rootfs);
    const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8"));
    const manifest = JSON.parse(readFileSync(blobPath(layout, index.manifests[0].digest), "utf8"));
    cfg = JSON.parse(readFileSync(blobPath(layout, manifest.config.digest), "utf8"));
    for (const l of manifest.layers as Descriptor[]) {
      const r = await sh(["tar", "-C", rootfs, "--numeric-owner", "-xzpf", blobPath(layout, l.digest)]);
      expect(r.err).toBe("");
    }
  }, 300_000);

  /** The image's entrypoint with args, as a runtime would start it (own mount and PID namespaces). */
  function inImage(args: string[], o: { stdout?: "pipe" | "ignore"; entrypoint?: string[] } = {}) {
    const [uid] = cfg.config.User.split(":");
    // sh stays PID 1 of the namespace (no exec): --kill-child kills it when unshare dies, and the
    // kernel then kills the whole namespace. The role itself would not get that signal: it is
    // cleared when chroot --userspec changes the credentials.
    const script = `mount --rbind /dev "$0/dev" && chroot --userspec=${uid}:${uid} "$0" /usr/bin/env -i -C "${cfg.config.WorkingDir}" ${cfg.config.Env.map((e) => `'${e}'`).join(" ")} HOME=/tmp "$@"`;
    return Bun.spawn(
      [
        "unshare",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        `--mount-proc=${join(rootfs, "proc")}`,
        "sh",
        "-c",
        script,
        rootfs,
        ...(o.entrypoint ?? cfg.config.Entrypoint),
        ...args,
      ],
      { stdout: o.stdout ?? "pipe", stderr: "pipe" },
    );
  }

  // `liqo` has no version subcommand (cli/liqo.ts); its usage carries the version.
  test("the entrypoint runs as uid 1000: liqo --help names the version", async () => {
    const p = inImage(["--help"]);
    const [out, err] = await Promise.all([
      new Response(p.stdout as ReadableStream).text(),
      new Response(p.stderr).text(),
    ]);
    expect(err).toBe("");
    expect(await p.exited).toBe(0);
    const version = JSON.parse(readFileSync(join(import.meta.dir, "../../package.json"), "utf8")).version;
    expect(out).toContain(`(liqo v${version})`);
    expect(out).toContain("controller-manager");
  }, 120_000);

  test("the processes run as the image's user, not root", async () => {
    const p = inImage([], { entrypoint: ["id", "-u"] });
    expect((await new Response(p.stdout as ReadableStream).text()).trim()).toBe(cfg.config.User);
    expect(await p.exited).toBe(0);
  });

  test("the image has the network tools the gateway needs", async () => {
    for (const tool of [
      "usr/sbin/nft",
      "usr/bin/wg",
      "usr/bin/wireguard-go",
      "usr/local/bin/wireguard-go",
      "usr/sbin/sysctl",
      "usr/bin/ping",
      "bin/ip",
      "usr/local/bin/bun",
    ])
      expect(() => readFileSync(join(rootfs, tool))).not.toThrow();
    expect(readFileSync(join(rootfs, "etc/debian_version"), "utf8")).toMatch(/^12\./);
  });

  test("liqo auth runs from the image against a rig cluster and answers /healthz and /ids", async () => {
    // What a pod would mount: a kubeconfig (here the rig's, data-embedded) and the serving certificate.
    const secrets = join(rootfs, "tmp/liqo");
    mkdirSync(secrets, { recursive: true });
    copyFileSync(rig.clusters[0]!.kubeconfig, join(secrets, "kubeconfig"));
    const tls = await sh([
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=liqo-auth",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      join(secrets, "tls.key"),
      "-out",
      join(secrets, "tls.crt"),
    ]);
    expect(tls.code).toBe(0);
    for (const f of ["kubeconfig", "tls.key", "tls.crt"]) chmodSync(join(secrets, f), 0o644);
    const [port, admin] = [await freePort(), await freePort()];
    const p = inImage(
      [
        "auth",
        "--kubeconfig=/tmp/liqo/kubeconfig",
        "--tls-cert-file=/tmp/liqo/tls.crt",
        "--tls-key-file=/tmp/liqo/tls.key",
        `--address=127.0.0.1:${port}`,
        `--admin-address=127.0.0.1:${admin}`,
      ],
      { stdout: "ignore" },
    );
    const errText = new Response(p.stderr).text();
    try {
      // An exit ends the wait at once (waitFor retries on throws), then fails with the role's stderr.
      await waitFor(
        "liqo auth (in the image) to be ready",
        async () =>
          p.exitCode !== null ||
          fetch(`http://127.0.0.1:${admin}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
            (r) => r.ok,
            () => false,
          ),
        {
          timeoutMs: 120_000,
          describe: () =>
            fetch(`http://127.0.0.1:${admin}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
              (r) => r.text(),
              (e) => String(e),
            ),
        },
      );
      if (p.exitCode !== null)
        expect(`liqo auth exited ${p.exitCode}: ${await errText}`).toBe("liqo auth still running");
      expect((await fetch(`http://127.0.0.1:${admin}/healthz`)).status).toBe(200);
      const ids = (await fetch(`https://127.0.0.1:${port}/ids`, {
        tls: { rejectUnauthorized: false },
      } as RequestInit).then((r) => r.json())) as { clusterId: string };
      const uid = (await rig.client("rome").get(Resources.namespaces, "kube-system")).metadata.uid;
      expect(ids.clusterId).toBe(uid!);
    } finally {
      // unshare --fork ignores SIGTERM while it waits for its child; its death kills the
      // namespace (see inImage), as a runtime's stop does after the grace period.
      p.kill("SIGKILL");
      await p.exited;
    }
    // Nothing of the role outlives the "container".
    await waitFor(
      "the role to be gone with its namespace",
      () =>
        fetch(`http://127.0.0.1:${admin}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
          () => false,
          () => true,
        ),
      { timeoutMs: 30_000 },
    );
  }, 180_000);
});
