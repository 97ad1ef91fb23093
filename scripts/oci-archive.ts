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
  const tar = `${out}.tar.partial`;
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
  await sh(["sh", "-c", `gzip -n -6 -c '${tar}' > '${out}.partial'`], `gzip ${tar}`);
  rmSync(tar);
  renameSync(`${out}.partial`, out);
  const layer = { digest: await sha256File(out), diffId, size: statSync(out).size, comment: o.comment };
  await Bun.write(meta, JSON.stringify(layer));
  return { ...layer, path: out };
}

export const ociArch = (arch = process.arch) => ({ x64: "amd64", arm64: "arm64" })[arch as "x64" | "arm64"] ?? arch;

/** Writes the OCI archive (a tar at `out`) of an image of `layers` (base first) named `ref`. */
export async function writeOciArchive(o: {
  out: string;
  layers: Layer[];
  config: ImageConfig;
  ref: string;
  work: string;
}): Promise<{ manifest: string; config: string; size: number }> {
  const root = join(o.work, "oci");
  rmSync(root, { recursive: true, force: true });
  const blobs = join(root, "blobs/sha256");
  mkdirSync(blobs, { recursive: true });
  const blob = async (text: string) => {
    const digest = `sha256:${new Bun.CryptoHasher("sha256").update(text).digest("hex")}`;
    await Bun.write(join(blobs, digest.slice(7)), text);
    return { digest, size: Buffer.byteLength(text) };
  };
  const created = new Date(epoch() * 1000).toISOString();
  const config = await blob(
    JSON.stringify({
      created,
      architecture: ociArch(),
      os: "linux",
      config: {
        User: o.config.user,
        WorkingDir: o.config.workingDir,
        Entrypoint: o.config.entrypoint,
        ...(o.config.cmd ? { Cmd: o.config.cmd } : {}),
        Env: o.config.env,
        Labels: o.config.labels,
      },
      rootfs: { type: "layers", diff_ids: o.layers.map((l) => l.diffId) },
      history: o.layers.map((l) => ({ created, created_by: l.comment })),
    }),
  );
  for (const l of o.layers)
    await sh(["ln", "-f", l.path, join(blobs, l.digest.slice(7))], `link ${l.path}`).catch(() =>
      sh(["cp", l.path, join(blobs, l.digest.slice(7))], `copy ${l.path}`),
    );
  const manifest = await blob(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA.manifest,
      config: { mediaType: MEDIA.config, digest: config.digest, size: config.size },
      layers: o.layers.map((l) => ({ mediaType: MEDIA.layer, digest: l.digest, size: l.size })),
      annotations: { "org.opencontainers.image.created": created },
    }),
  );
  const tag = o.ref.slice(o.ref.lastIndexOf(":") + 1);
  await Bun.write(join(root, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  await Bun.write(
    join(root, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA.index,
      manifests: [
        {
          mediaType: MEDIA.manifest,
          digest: manifest.digest,
          size: manifest.size,
          platform: { architecture: ociArch(), os: "linux" },
          // docker load names the image from io.containerd.image.name; skopeo/crane use ref.name (the tag).
          annotations: { "io.containerd.image.name": o.ref, "org.opencontainers.image.ref.name": tag },
        },
      ],
    }),
  );
  // docker's own archive index, as `docker save` (>= 25) writes next to the OCI layout.
  await Bun.write(
    join(root, "manifest.json"),
    JSON.stringify([
      {
        Config: `blobs/sha256/${config.digest.slice(7)}`,
        RepoTags: [o.ref],
        Layers: o.layers.map((l) => `blobs/sha256/${l.digest.slice(7)}`),
      },
    ]),
  );
  mkdirSync(join(o.out, ".."), { recursive: true });
  await sh(
    [
      "tar",
      "-C",
      root,
      "--sort=name",
      `--mtime=@${epoch()}`,
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "-cf",
      `${o.out}.partial`,
      "oci-layout",
      "index.json",
      "manifest.json",
      "blobs",
    ],
    "tar the OCI layout",
  );
  renameSync(`${o.out}.partial`, o.out);
  rmSync(root, { recursive: true, force: true });
  return { manifest: manifest.digest, config: config.digest, size: statSync(o.out).size };
}
