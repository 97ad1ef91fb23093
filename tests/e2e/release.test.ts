// The release (scripts/release.sh): run whole, as the tag workflow runs it, into a temporary folder.
// Every artifact is there and SHA256SUMS verifies; the liqoctl binaries report the release's version
// and commit (this machine's natively, linux/arm64 in the arm64 image through qemu, darwin's by
// their Mach-O headers); the image archive is one OCI image index of exactly linux/amd64 and
// linux/arm64, every blob's digest and size and every layer's diff_id checked as docker load checks
// them, docker's manifest.json agreeing; the arm64 image, unpacked, runs its entrypoint (qemu) and
// names the version; the chart says the version.
// Warm (Debian layers cached in ~/.cache/liqo-bun/image) about 1 minute on 2 cores (the release
// itself 36 s). Cold, or after the Dockerfile's package list changes, the release first builds the
// arm64 Debian root file system under qemu: 6 minutes on an idle machine, 10 under a loaded one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Descriptor, MEDIA } from "../../scripts/oci-archive.ts";
import { sourceCommit } from "../../scripts/build-liqoctl.ts";
import { liqoctlArtifact } from "../../scripts/release.ts";

const repo = resolve(import.meta.dir, "../..");
const pkgVersion = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version as string;
// A pre-release of package.json's version: distinct from what an unversioned build would report.
const VERSION = `${pkgVersion}-test.1`;
const REF = `ghcr.io/liqo-bun/liqo:${VERSION}`;
const tmp = mkdtempSync(join(tmpdir(), "liqo-release-test-"));
const dist = join(tmp, "dist");
const layout = join(tmp, "layout");
let commit = "";
let buildLog = "";

interface Manifest {
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}
interface ImageConfig {
  architecture: string;
  os: string;
  config: { Entrypoint: string[]; WorkingDir: string; User: string; Labels: Record<string, string> };
  rootfs: { diff_ids: string[] };
}

async function sh(cmd: string[], o: { cwd?: string } = {}): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(cmd, { cwd: o.cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

const sha256 = (bytes: Uint8Array) => `sha256:${new Bun.CryptoHasher("sha256").update(bytes).digest("hex")}`;
const blob = (digest: string) => new Uint8Array(readFileSync(join(layout, "blobs/sha256", digest.slice(7))));
const json = <T>(digest: string) => JSON.parse(new TextDecoder().decode(blob(digest))) as T;

/** A blob as docker load takes it: present, of the descriptor's size, hashing to its digest. */
function checkBlob(d: Descriptor, what: string): string[] {
  let bytes: Uint8Array;
  try {
    bytes = blob(d.digest);
  } catch {
    return [`${what} ${d.digest}: no such blob`];
  }
  const problems: string[] = [];
  if (bytes.length !== d.size) problems.push(`${what} ${d.digest}: ${bytes.length} bytes, descriptor says ${d.size}`);
  if (sha256(bytes) !== d.digest) problems.push(`${what} ${d.digest}: content hashes to ${sha256(bytes)}`);
  return problems;
}

/** The platform images the archive's one index names, by architecture. */
function platformImages(): Map<string, { descriptor: Descriptor; manifest: Manifest; config: ImageConfig }> {
  const top = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: Descriptor[] };
  const index = json<{ manifests: Descriptor[] }>(top.manifests[0]!.digest);
  return new Map(
    index.manifests.map((d) => {
      const manifest = json<Manifest>(d.digest);
      return [
        d.platform?.architecture ?? "?",
        { descriptor: d, manifest, config: json<ImageConfig>(manifest.config.digest) },
      ];
    }),
  );
}

/** The image's platform that is not this machine's (the one the release builds through qemu). */
const otherArch = process.arch === "arm64" ? "amd64" : "arm64";
let unpacked: Promise<string> | undefined;

/** The other platform's image unpacked (its layers in order), once. */
function otherRootfs(): Promise<string> {
  unpacked ??= (async () => {
    const root = join(tmp, `${otherArch}-rootfs`);
    mkdirSync(root);
    for (const l of platformImages().get(otherArch)!.manifest.layers) {
      const r = await sh(["tar", "-C", root, "-xzf", join(layout, "blobs/sha256", l.digest.slice(7))]);
      if (r.code !== 0) throw new Error(`unpack layer ${l.digest}: ${r.err}`);
    }
    return root;
  })();
  return unpacked;
}

/**
 * A command in an unpacked root file system, chrooted, with its own /proc (Bun reads its stack
 * bounds there: without it, Bun under qemu stops with "StackOverflow").
 */
function inRootfs(root: string, cmd: string[], o: { user?: string; cwd?: string } = {}) {
  return sh([
    "unshare",
    "--fork",
    "--pid",
    "--kill-child",
    `--mount-proc=${join(root, "proc")}`,
    "chroot",
    ...(o.user ? [`--userspec=${o.user}:${o.user}`] : []),
    root,
    "sh",
    "-c",
    `cd ${o.cwd ?? "/"} && exec "$@"`,
    "sh",
    ...cmd,
  ]);
}

beforeAll(async () => {
  commit = await sourceCommit();
  // --allow-dirty: a developer's checkout may have uncommitted changes (the commit then says -dirty).
  const started = performance.now();
  const r = await sh(["bash", join(repo, "scripts/release.sh"), VERSION, "--out", dist, "--allow-dirty"], {
    cwd: repo,
  });
  buildLog = `${r.out}${r.err}`;
  console.error(`[release test] scripts/release.sh took ${((performance.now() - started) / 1000).toFixed(0)} s`);
  if (r.code !== 0) throw new Error(`scripts/release.sh ${VERSION} failed (exit ${r.code}):\n${buildLog.slice(-4000)}`);
  mkdirSync(layout);
  const x = await sh(["tar", "-C", layout, "-xf", join(dist, `liqo-image-${VERSION}.oci.tar`)]);
  if (x.code !== 0) throw new Error(`untar the image archive: ${x.err}`);
}, 1_800_000);

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe("scripts/release.sh", () => {
  test("builds every artifact, and nothing else, and says what it built with progress lines", () => {
    const names = [...new Bun.Glob("*").scanSync({ cwd: dist, dot: true })].sort();
    expect(names).toEqual(
      [
        "SHA256SUMS",
        `liqo-${VERSION}.tgz`,
        `liqo-image-${VERSION}.oci.tar`,
        `liqoctl-${VERSION}-darwin-amd64.tar.gz`,
        `liqoctl-${VERSION}-darwin-arm64.tar.gz`,
        `liqoctl-${VERSION}-linux-amd64.tar.gz`,
        `liqoctl-${VERSION}-linux-arm64.tar.gz`,
      ].sort(),
    );
    expect(buildLog).toContain(`[release `);
    expect(buildLog).toContain(`liqo ${VERSION} (commit ${commit}) in ${dist}`);
  });

  test("SHA256SUMS covers every other artifact and verifies with sha256sum -c", async () => {
    const listed = readFileSync(join(dist, "SHA256SUMS"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => l.match(/^[0-9a-f]{64} {2}(\S+)$/)?.[1]);
    const others = [...new Bun.Glob("*").scanSync({ cwd: dist })].filter((n) => n !== "SHA256SUMS").sort();
    expect(listed).toEqual(others);
    const r = await sh(["sha256sum", "--strict", "-c", "SHA256SUMS"], { cwd: dist });
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out.trim().split("\n")).toEqual(others.map((n) => `${n}: OK`));
  });

  test("a changed artifact fails the check (the check can fail)", async () => {
    const copy = join(tmp, "sums");
    mkdirSync(copy);
    await Bun.write(join(copy, "SHA256SUMS"), Bun.file(join(dist, "SHA256SUMS")));
    const chart = `liqo-${VERSION}.tgz`;
    const bytes = new Uint8Array(await Bun.file(join(dist, chart)).arrayBuffer());
    bytes[bytes.length - 1]! ^= 1;
    await Bun.write(join(copy, chart), bytes);
    const r = await sh(["sha256sum", "--ignore-missing", "-c", "SHA256SUMS"], { cwd: copy });
    expect(r.code).toBe(1);
    expect(r.out).toContain(`${chart}: FAILED`);
  });
});

describe("liqoctl", () => {
  async function unpack(target: "linux-x64" | "linux-arm64" | "darwin-x64" | "darwin-arm64"): Promise<string> {
    const dir = join(tmp, `liqoctl-${target}`);
    mkdirSync(dir, { recursive: true });
    const r = await sh(["tar", "-C", dir, "-xzf", join(dist, liqoctlArtifact(VERSION, target))]);
    expect(r.err).toBe("");
    expect([...new Bun.Glob("*").scanSync({ cwd: dir })]).toEqual(["liqoctl"]);
    return join(dir, "liqoctl");
  }

  test("this machine's runs: version --client prints the release's version and commit", async () => {
    const bin = await unpack(process.arch === "arm64" ? "linux-arm64" : "linux-x64");
    const text = await sh([bin, "version", "--client"]);
    expect(text.err).toBe("");
    expect(text.out).toBe(`Client version: ${VERSION} (commit ${commit}, bun ${Bun.version}, linux/${process.arch})\n`);
    const j = await sh([bin, "version", "--client", "-o", "json"]);
    expect(JSON.parse(j.out).client).toMatchObject({ version: VERSION, commit });
  });

  test(`linux/${otherArch}'s runs too, in the ${otherArch} image (qemu)`, async () => {
    const bin = await unpack(otherArch === "arm64" ? "linux-arm64" : "linux-x64");
    const root = await otherRootfs();
    await Bun.write(join(root, "tmp/liqoctl"), Bun.file(bin));
    chmodSync(join(root, "tmp/liqoctl"), 0o755);
    const r = await inRootfs(root, ["/tmp/liqoctl", "version", "--client"]);
    expect(r.err).toBe("");
    expect(r.out).toBe(
      `Client version: ${VERSION} (commit ${commit}, bun ${Bun.version}, linux/${otherArch === "amd64" ? "x64" : "arm64"})\n`,
    );
  }, 180_000);

  test("darwin's are Mach-O programs for x86_64 and arm64", async () => {
    const cpu = async (t: "darwin-x64" | "darwin-arm64") => {
      const head = new DataView(
        (await Bun.file(await unpack(t))
          .slice(0, 8)
          .arrayBuffer()) as ArrayBuffer,
      );
      return { magic: head.getUint32(0, true).toString(16), cpu: head.getUint32(4, true).toString(16) };
    };
    expect(await cpu("darwin-x64")).toEqual({ magic: "feedfacf", cpu: "1000007" });
    expect(await cpu("darwin-arm64")).toEqual({ magic: "feedfacf", cpu: "100000c" });
  });
});

describe("the image archive", () => {
  test("index.json names the tag once, pointing at one image index of exactly linux/amd64 and linux/arm64", () => {
    const top = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: Descriptor[] };
    expect(top.manifests.length).toBe(1);
    const entry = top.manifests[0]!;
    expect(entry.mediaType).toBe(MEDIA.index);
    expect(entry.annotations).toEqual({
      "io.containerd.image.name": REF,
      "org.opencontainers.image.ref.name": VERSION,
    });
    expect(checkBlob(entry, "index")).toEqual([]);
    const index = json<{ mediaType: string; manifests: Descriptor[] }>(entry.digest);
    expect(index.mediaType).toBe(MEDIA.index);
    expect(index.manifests.map((m) => [m.mediaType, m.platform])).toEqual([
      [MEDIA.manifest, { architecture: "amd64", os: "linux" }],
      [MEDIA.manifest, { architecture: "arm64", os: "linux" }],
    ]);
  });

  test("each manifest, config and layer blob has its digest and size; configs name their CPU; layers match diff_ids", () => {
    const problems: string[] = [];
    const images = platformImages();
    for (const [arch, { descriptor, manifest, config }] of images) {
      problems.push(...checkBlob(descriptor, `${arch} manifest`), ...checkBlob(manifest.config, `${arch} config`));
      if (config.architecture !== arch || config.os !== "linux")
        problems.push(`${arch}: config says ${config.os}/${config.architecture}`);
      if (config.rootfs.diff_ids.length !== manifest.layers.length)
        problems.push(`${arch}: ${config.rootfs.diff_ids.length} diff_ids for ${manifest.layers.length} layers`);
      manifest.layers.forEach((l, i) => {
        const found = checkBlob(l, `${arch} layer ${i}`);
        problems.push(...found);
        if (found.length) return;
        if (l.mediaType !== MEDIA.layer) problems.push(`${arch} layer ${i}: mediaType ${l.mediaType}`);
        const diffId = sha256(Bun.gunzipSync(blob(l.digest) as Uint8Array<ArrayBuffer>));
        if (diffId !== config.rootfs.diff_ids[i]) problems.push(`${arch} layer ${i}: uncompressed ${diffId}`);
      });
    }
    expect(problems).toEqual([]);
    // Only the app's layer (/liqo: JavaScript and WebAssembly) is shared; Debian, Bun, wireguard-go are per CPU.
    const [amd, arm] = [images.get("amd64")!, images.get("arm64")!];
    expect(amd.manifest.layers.map((l, i) => l.digest === arm.manifest.layers[i]!.digest)).toEqual([
      false,
      false,
      true,
      false,
    ]);
    for (const { config } of images.values())
      expect(config.config.Labels).toMatchObject({
        "org.opencontainers.image.version": VERSION,
        "org.opencontainers.image.revision": commit,
      });
  });

  test("docker's manifest.json lists each platform's image under its own tag, with the same blobs", () => {
    const docker = JSON.parse(readFileSync(join(layout, "manifest.json"), "utf8")) as {
      Config: string;
      RepoTags: string[];
      Layers: string[];
    }[];
    const images = platformImages();
    expect(docker).toEqual(
      ["amd64", "arm64"].map((arch) => ({
        Config: `blobs/sha256/${images.get(arch)!.manifest.config.digest.slice(7)}`,
        RepoTags: [`${REF}-${arch}`],
        Layers: images.get(arch)!.manifest.layers.map((l) => `blobs/sha256/${l.digest.slice(7)}`),
      })),
    );
  });

  test("skopeo (an independent reader) sees both platforms and copies them all", async () => {
    const archive = `oci-archive:${join(dist, `liqo-image-${VERSION}.oci.tar`)}`;
    for (const arch of ["amd64", "arm64"]) {
      const r = await sh(["skopeo", "inspect", "--override-os", "linux", "--override-arch", arch, archive]);
      expect(r.err).toBe("");
      expect(JSON.parse(r.out)).toMatchObject({ Architecture: arch, Os: "linux" });
    }
    // As the workflow pushes it (--all: the index and both images), into a directory instead of
    // a registry; skopeo checks every blob it copies against its digest.
    const copy = await sh([
      "skopeo",
      "copy",
      "-q",
      "--all",
      "--preserve-digests",
      archive,
      `oci:${join(tmp, "copied")}:x`,
    ]);
    expect(copy.err).toBe("");
    expect(copy.code).toBe(0);
    rmSync(join(tmp, "copied"), { recursive: true, force: true });
  }, 120_000);

  test(`the ${otherArch} image runs (qemu): its programs are ${otherArch}, its entrypoint names the version`, async () => {
    const { config } = platformImages().get(otherArch)!;
    const root = await otherRootfs();
    const file = await sh(["file", "-L", join(root, "usr/local/bin/bun"), join(root, "usr/local/bin/wireguard-go")]);
    expect(file.out.match(otherArch === "arm64" ? /ARM aarch64/g : /x86-64/g)?.length).toBe(2);
    expect((await inRootfs(root, ["dpkg", "--print-architecture"])).out).toBe(`${otherArch}\n`);
    // What the roles report as their version and commit (cli/version.ts reads it).
    expect(JSON.parse(readFileSync(join(root, "liqo/build-info.json"), "utf8"))).toEqual({ version: VERSION, commit });
    // As a runtime starts it: the config's user, working dir and entrypoint.
    const r = await inRootfs(root, [...config.config.Entrypoint, "--help"], {
      user: config.config.User,
      cwd: config.config.WorkingDir,
    });
    expect(r.err).toBe("");
    expect(r.out).toContain(`(liqo v${VERSION})`);
    expect(r.out).toContain("controller-manager");
  }, 300_000);
});

describe("the chart", () => {
  test("helm package gave it the release's version and appVersion (the image tag)", async () => {
    const list = await sh(["tar", "-xzOf", join(dist, `liqo-${VERSION}.tgz`), "liqo/Chart.yaml"]);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^version: ${VERSION.replace(/\./g, "\\.")}$`, "m"));
    expect(list.out).toMatch(new RegExp(`^appVersion: ${VERSION.replace(/\./g, "\\.")}$`, "m"));
    const files = (await sh(["tar", "-tzf", join(dist, `liqo-${VERSION}.tgz`)])).out;
    expect(files).toContain("liqo/templates/");
    expect(files).toContain("liqo/crds/");
    expect(files).not.toContain(".test.ts");
  });
});
