// Writing an OCI image archive without a container engine: layers are directories made into
// reproducible tarballs (GNU tar, sorted, fixed mtime and owners) and gzipped; the archive is a tar
// of the OCI image layout (oci-layout, index.json, blobs/sha256/*) plus docker's manifest.json, so
// `docker load`, `skopeo copy oci-archive:` and `crane push` all read it.
import { createReadStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

export const MEDIA = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

export interface Layer {
  digest: string;
  diffId: string;
  size: number;
  path: string;
  comment: string;
}
export interface ImageConfig {
  user: string;
  workingDir: string;
  entrypoint: string[];
  cmd?: string[];
  env: string[];
  labels: Record<string, string>;
}

/** The fixed time every file and the config carry, for reproducible digests (SOURCE_DATE_EPOCH wins). */
export const epoch = () => Number(process.env.SOURCE_DATE_EPOCH ?? 0);

async function sha256File(path: string): Promise<string> {
  const h = new Bun.CryptoHasher("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return `sha256:${h.digest("hex")}`;
}

async function sh(cmd: string[], what: string): Promise<void> {
  const p = Bun.spawn(cmd, { stdout: "ignore", stderr: "pipe" });
  const err = await new Response(p.stderr).text();
  if ((await p.exited) !== 0)
    throw new Error(`${what} failed (${cmd[0]} exit ${p.exitCode}): ${err.trim().slice(-2000)}`);
}

/**
 * Makes `dir` into a gzip layer at `out` (+ a .json with its digests, so a cached layer is reused
 * without re-hashing). Paths in `exclude` are GNU tar patterns relative to dir (e.g. "./proc/*").
 */
export async function makeLayer(dir: string, out: string, o: { comment: string; exclude?: string[] }): Promise<Layer> {
  const meta = `${out}.json`;
  if (existsSync(out) && existsSync(meta)) return { ...(await Bun.file(meta).json()), path: out } as Layer;
  // Per-process scratch names: two processes may make the same (reproducible) layer at once; the
  // last rename wins with identical content.
  const tar = `${out}.${process.pid}.tar.partial`;
  await sh(
    [
      "tar",
      "-C",
      dir,
      "--sort=name",
      `--mtime=@${epoch()}`,
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--format=posix",
      "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
      "--xattrs",
      "--xattrs-include=security.capability",
      ...(o.exclude ?? []).map((e) => `--exclude=${e}`),
      "-cf",
      tar,
      ".",
    ],
    `tar ${dir}`,
  );
  const diffId = await sha256File(tar);
  // gzip -n: no name or time in the header, so the compressed digest is reproducible too.
  const gz = `${out}.${process.pid}.partial`;
  await sh(["sh", "-c", `gzip -n -6 -c '${tar}' > '${gz}'`], `gzip ${tar}`);
  rmSync(tar);
  renameSync(gz, out);
  const layer = { digest: await sha256File(out), diffId, size: statSync(out).size, comment: o.comment };
  await Bun.write(meta, JSON.stringify(layer));
  return { ...layer, path: out };
}

export const ociArch = (arch = process.arch) => ({ x64: "amd64", arm64: "arm64" })[arch as "x64" | "arm64"] ?? arch;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}

/** An OCI image layout being written in `work`/oci: blobs by digest, then tarred into the archive. */
class Layout {
  readonly root: string;
  readonly blobs: string;
  readonly created = new Date(epoch() * 1000).toISOString();
  constructor(work: string) {
    this.root = join(work, "oci");
    rmSync(this.root, { recursive: true, force: true });
    this.blobs = join(this.root, "blobs/sha256");
    mkdirSync(this.blobs, { recursive: true });
  }

  async blob(mediaType: string, text: string): Promise<Descriptor> {
    const digest = `sha256:${new Bun.CryptoHasher("sha256").update(text).digest("hex")}`;
    await Bun.write(join(this.blobs, digest.slice(7)), text);
    return { mediaType, digest, size: Buffer.byteLength(text) };
  }

  /** One platform's image: its layers linked in, its config and manifest written. */
  async image(layers: Layer[], c: ImageConfig, arch: string): Promise<{ manifest: Descriptor; config: Descriptor }> {
    const config = await this.blob(
      MEDIA.config,
      JSON.stringify({
        created: this.created,
        architecture: arch,
        os: "linux",
        config: {
          User: c.user,
          WorkingDir: c.workingDir,
          Entrypoint: c.entrypoint,
          ...(c.cmd ? { Cmd: c.cmd } : {}),
          Env: c.env,
          Labels: c.labels,
        },
        rootfs: { type: "layers", diff_ids: layers.map((l) => l.diffId) },
        history: layers.map((l) => ({ created: this.created, created_by: l.comment })),
      }),
    );
    for (const l of layers) {
      const to = join(this.blobs, l.digest.slice(7));
      if (existsSync(to)) continue; // a layer two platforms share (e.g. the app)
      await sh(["ln", "-f", l.path, to], `link ${l.path}`).catch(() => sh(["cp", l.path, to], `copy ${l.path}`));
    }
    const manifest = await this.blob(
      MEDIA.manifest,
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MEDIA.manifest,
        config: { mediaType: MEDIA.config, digest: config.digest, size: config.size },
        layers: layers.map((l) => ({ mediaType: MEDIA.layer, digest: l.digest, size: l.size })),
        annotations: { "org.opencontainers.image.created": this.created },
      }),
    );
    return { manifest: { ...manifest, platform: { architecture: arch, os: "linux" } }, config };
  }

  /** index.json, docker's manifest.json, then the tar at `out`; removes the layout. */
  async finish(out: string, index: Descriptor[], docker: { Config: string; RepoTags: string[]; Layers: string[] }[]) {
    await Bun.write(join(this.root, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
    await Bun.write(
      join(this.root, "index.json"),
      JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index, manifests: index }),
    );
    // docker's own archive index, as `docker save` (>= 25) writes next to the OCI layout.
    await Bun.write(join(this.root, "manifest.json"), JSON.stringify(docker));
    mkdirSync(join(out, ".."), { recursive: true });
    await sh(
      [
        "tar",
        "-C",
        this.root,
        "--sort=name",
        `--mtime=@${epoch()}`,
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "-cf",
        `${out}.partial`,
        "oci-layout",
        "index.json",
        "manifest.json",
        "blobs",
      ],
      "tar the OCI layout",
    );
    renameSync(`${out}.partial`, out);
    rmSync(this.root, { recursive: true, force: true });
    return statSync(out).size;
  }
}

/** docker load names the image from io.containerd.image.name; skopeo/crane use ref.name (the tag). */
const refAnnotations = (ref: string) => ({
  "io.containerd.image.name": ref,
  "org.opencontainers.image.ref.name": ref.slice(ref.lastIndexOf(":") + 1),
});
const dockerEntry = (layers: Layer[], config: Descriptor, tag: string) => ({
  Config: `blobs/sha256/${config.digest.slice(7)}`,
  RepoTags: [tag],
  Layers: layers.map((l) => `blobs/sha256/${l.digest.slice(7)}`),
});

/** Writes the OCI archive (a tar at `out`) of an image of `layers` (base first) named `ref`, for this machine's CPU unless `arch`. */
export async function writeOciArchive(o: {
  out: string;
  layers: Layer[];
  config: ImageConfig;
  ref: string;
  work: string;
  arch?: string;
}): Promise<{ manifest: string; config: string; size: number }> {
  const layout = new Layout(o.work);
  const { manifest, config } = await layout.image(o.layers, o.config, o.arch ?? ociArch());
  const size = await layout.finish(
    o.out,
    [{ ...manifest, annotations: refAnnotations(o.ref) }],
    [dockerEntry(o.layers, config, o.ref)],
  );
  return { manifest: manifest.digest, config: config.digest, size };
}

export interface PlatformImage {
  /** OCI architecture: amd64, arm64. */
  arch: string;
  layers: Layer[];
  config: ImageConfig;
}

/**
 * A multi-platform OCI archive: index.json names `ref` once, pointing at an image index (what a
 * registry serves for a multi-arch tag) of one manifest per platform, so `skopeo copy --all` pushes
 * all of them and containerd (ctr import, docker with the containerd store) unpacks the host's.
 * docker's manifest.json (read by docker load with the classic store) cannot hold an index: it
 * lists every platform's image under its own tag, `ref`-amd64 and `ref`-arm64.
 */
export async function writeMultiArchOciArchive(o: {
  out: string;
  images: PlatformImage[];
  ref: string;
  work: string;
}): Promise<{ index: string; manifests: { arch: string; manifest: string; config: string }[]; size: number }> {
  const archs = o.images.map((i) => i.arch);
  if (new Set(archs).size !== archs.length) throw new Error(`one image per platform, got ${archs.join(", ")}`);
  const layout = new Layout(o.work);
  const written = [];
  for (const img of o.images) written.push({ img, ...(await layout.image(img.layers, img.config, img.arch)) });
  const index = await layout.blob(
    MEDIA.index,
    JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index, manifests: written.map((w) => w.manifest) }),
  );
  const size = await layout.finish(
    o.out,
    [{ ...index, annotations: refAnnotations(o.ref) }],
    written.map((w) => dockerEntry(w.img.layers, w.config, `${o.ref}-${w.img.arch}`)),
  );
  return {
    index: index.digest,
    manifests: written.map((w) => ({ arch: w.img.arch, manifest: w.manifest.digest, config: w.config.digest })),
    size,
  };
}
