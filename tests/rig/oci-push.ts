// Pushing an OCI image archive (a tar of an OCI image layout: index.json, blobs/sha256/*) to a
// registry with the OCI distribution protocol, in plain fetch: HEAD each blob and upload only the
// missing ones (POST for an upload URL, PUT the bytes with their digest, or mount the blob from a
// repository this push already filled), then PUT the manifest unless the tag already names it.
// Nothing is unpacked: blobs are read straight out of the tar, by offset.
import { existsSync, statSync } from "node:fs";
import { RigError } from "./errors.ts";

const MANIFEST_TYPES = [
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
];
const INDEX_TYPES = new Set([MANIFEST_TYPES[1], MANIFEST_TYPES[3]]);

interface Member {
  offset: number;
  size: number;
}

const text = (b: Uint8Array, from: number, len: number) => {
  const s = new TextDecoder().decode(b.subarray(from, from + len));
  const nul = s.indexOf("\0");
  return nul < 0 ? s : s.slice(0, nul);
};

function numeric(b: Uint8Array, from: number, len: number): number {
  // GNU tar's base-256 for sizes past 8 GiB: the first byte's high bit set.
  if (b[from]! & 0x80) {
    let v = b[from]! & 0x7f;
    for (let i = 1; i < len; i++) v = v * 256 + b[from + i]!;
    return v;
  }
  const s = text(b, from, len).trim();
  return s ? Number.parseInt(s, 8) : 0;
}

/** The header's checksum: its bytes summed with the checksum field read as spaces. */
function validHeader(b: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : b[i]!;
  return sum === numeric(b, 148, 8);
}

/** pax extended header records: "<len> <key>=<value>\n". */
function paxPath(data: Uint8Array): string | undefined {
  const s = new TextDecoder().decode(data);
  for (const m of s.matchAll(/\d+ ([^=]+)=([^\n]*)\n/g)) if (m[1] === "path") return m[2];
  return undefined;
}

/** The members of a tar file (ustar, GNU long names, pax paths) by name, read header by header. */
export async function tarMembers(archive: string): Promise<Map<string, Member>> {
  if (!existsSync(archive)) throw new RigError(`${archive}: no such file`);
  const file = Bun.file(archive);
  const total = statSync(archive).size;
  const read = async (from: number, len: number) => new Uint8Array(await file.slice(from, from + len).arrayBuffer());
  const members = new Map<string, Member>();
  let offset = 0;
  let longName: string | undefined;
  while (offset + 512 <= total) {
    const h = await read(offset, 512);
    if (h.every((x) => x === 0)) break;
    if (!validHeader(h))
      throw new RigError(
        `${archive} is not a tar archive (bad header checksum at byte ${offset}); expected an OCI image archive`,
      );
    const size = numeric(h, 124, 12);
    const type = String.fromCharCode(h[156]!);
    const data = offset + 512;
    if (data + size > total)
      throw new RigError(`${archive} is truncated: its member at byte ${offset} ends past the file`);
    if (type === "L") longName = text(await read(data, size), 0, size);
    else if (type === "x") longName = paxPath(await read(data, size)) ?? longName;
    else if (type !== "g") {
      const prefix = text(h, 257, 6).startsWith("ustar") ? text(h, 345, 155) : "";
      const name = longName ?? (prefix ? `${prefix}/${text(h, 0, 100)}` : text(h, 0, 100));
      longName = undefined;
      if (type === "0" || type === "\0") members.set(name.replace(/^(\.\/)+/, ""), { offset: data, size });
    }
    offset = data + Math.ceil(size / 512) * 512;
  }
  if (!members.size) throw new RigError(`${archive} is empty or not a tar archive; expected an OCI image archive`);
  return members;
}

export interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** An OCI image archive opened for reading: its index and its blobs by digest. */
export interface OciArchive {
  path: string;
  index: { manifests?: Descriptor[] };
  /** The blob as a lazily read slice of the archive; an error naming the archive if absent. */
  blob(d: Descriptor): Blob;
  // biome-ignore lint/suspicious/noExplicitAny: OCI manifests and indexes, read as the registry returns them
  json(d: Descriptor): Promise<any>;
}

export async function openOciArchive(path: string): Promise<OciArchive> {
  const members = await tarMembers(path);
  const file = Bun.file(path);
  const blob = (d: Descriptor) => {
    const [algo, hex] = d.digest.split(":");
    const m = members.get(`blobs/${algo}/${hex}`);
    if (!m) throw new RigError(`${path} lacks blobs/${algo}/${hex}, which its image refers to`);
    if (m.size !== d.size)
      throw new RigError(`${path}: blobs/${algo}/${hex} is ${m.size} bytes, but its descriptor says ${d.size}`);
    return file.slice(m.offset, m.offset + m.size);
  };
  const index = members.get("index.json");
  if (!index || !members.has("oci-layout")) {
    throw new RigError(
      `${path} is not an OCI image archive (no ${index ? "oci-layout" : "index.json"}); build one with \`rig image build\`, \`skopeo copy ... oci-archive:\` or \`docker save\` (25 or later)`,
    );
  }
  const parse = async (what: string, b: Blob) => {
    try {
      return JSON.parse(await b.text());
    } catch (err) {
      throw new RigError(`${path}: ${what} is not valid JSON (${(err as Error).message})`);
    }
  };
  return {
    path,
    index: await parse("index.json", file.slice(index.offset, index.offset + index.size)),
    blob,
    json: (d) => parse(`blobs/${d.digest.replace(":", "/")}`, blob(d)),
  };
}

/** The names an OCI archive gives its images (index.json's io.containerd.image.name annotations). */
export const archiveImageNames = (a: OciArchive): string[] =>
  (a.index.manifests ?? []).map((m) => m.annotations?.["io.containerd.image.name"]).filter((n): n is string => !!n);

/** A registry host as the first component of a repository name (a port is none: localhost:5000 → localhost-5000). */
export const mirrorNamespace = (host: string) => host.replace(":", "-");

/** Where a reference lives in the rig's registry: the repository is the full name, host included. */
export function mirrorRepository(ref: string): { host: string; repository: string; reference: string } {
  const at = ref.indexOf("@");
  const named = at < 0 ? ref : ref.slice(0, at);
  const colon = named.lastIndexOf(":");
  const hasTag = colon > named.lastIndexOf("/");
  const name = hasTag ? named.slice(0, colon) : named;
  const reference = at >= 0 ? ref.slice(at + 1) : hasTag ? named.slice(colon + 1) : "latest";
  const slash = name.indexOf("/");
  if (slash < 0) throw new RigError(`${ref} is not a full image name (host/path:tag); normalize it first`);
  const host = name.slice(0, slash);
  return { host, repository: `${mirrorNamespace(host)}${name.slice(slash)}`, reference };
}

export interface PushReport {
  names: string[];
  /** The pushed top-level manifest's digest. */
  digest: string;
  uploaded: string[];
  mounted: string[];
  present: string[];
  /** Tags that named another manifest (or nothing) and now name this one. */
  tagged: string[];
}

export interface PushOptions {
  archive: string;
  /** The registry's base URL, e.g. http://172.31.0.1:5001. */
  registry: string;
  /** Names to push the image as (default: the names the archive gives it). */
  names?: string[];
  fetch?: typeof fetch;
}

class Registry {
  constructor(
    readonly base: string,
    private readonly archive: string,
    private readonly doFetch: typeof fetch,
  ) {}

  async call(method: string, path: string, init: RequestInit = {}, ok: number[] = [200, 201, 202]): Promise<Response> {
    const url = new URL(path, this.base);
    let res: Response;
    try {
      res = await this.doFetch(url, { ...init, method, redirect: "follow" });
    } catch (err) {
      throw new RigError(
        `pushing ${this.archive}: cannot reach the registry at ${this.base} (${(err as Error).message}); is the rig up with real nodes?`,
        { cause: err },
      );
    }
    if (!ok.includes(res.status)) {
      const body = method === "HEAD" ? "" : (await res.text()).slice(0, 1000);
      throw new RigError(
        `pushing ${this.archive}: ${method} ${url.pathname} at ${this.base} answered ${res.status} ${body}`.trim(),
      );
    }
    return res;
  }
}

/**
 * Pushes the image of an OCI archive under each of its names (or `names`). A blob the repository
 * has is not sent again, nor a manifest its tag already names: pushing twice sends only HEADs.
 */
export async function pushArchive(o: PushOptions): Promise<PushReport> {
  const archive = await openOciArchive(o.archive);
  const names = o.names ?? archiveImageNames(archive);
  if (!names.length)
    throw new RigError(
      `${o.archive} names no image (no io.containerd.image.name annotation in index.json); give a name to push it as`,
    );
  const tops = archive.index.manifests ?? [];
  if (tops.length !== 1)
    throw new RigError(
      `${o.archive} holds ${tops.length} images; push takes an archive of one (its index.json lists one manifest)`,
    );
  const top = tops[0]!;
  const registry = new Registry(o.registry.replace(/\/+$/, ""), o.archive, o.fetch ?? fetch);
  const report: PushReport = { names, digest: top.digest, uploaded: [], mounted: [], present: [], tagged: [] };
  // Manifests below the top one (an index's images), children first: the registry checks references.
  const manifests: Descriptor[] = [];
  const blobs = new Map<string, Descriptor>();
  const walk = async (d: Descriptor) => {
    const body = await archive.json(d);
    const type = d.mediaType ?? body.mediaType;
    if (INDEX_TYPES.has(type)) for (const child of body.manifests ?? []) await walk(child);
    else for (const b of [body.config, ...(body.layers ?? [])] as Descriptor[]) blobs.set(b.digest, b);
    manifests.push({ ...d, mediaType: type });
  };
  await walk(top);
  let source: string | undefined;
  for (const ref of names) {
    const { repository, reference } = mirrorRepository(ref);
    await Promise.all([...blobs.values()].map((b) => pushBlob(registry, archive, repository, b, source, report)));
    source ??= repository;
    for (const m of manifests) {
      const isTop = m === manifests[manifests.length - 1];
      await pushManifest(
        registry,
        archive,
        repository,
        m,
        isTop ? reference : m.digest,
        report,
        isTop ? ref : undefined,
      );
    }
  }
  return report;
}

async function pushBlob(
  registry: Registry,
  archive: OciArchive,
  repository: string,
  b: Descriptor,
  mountFrom: string | undefined,
  report: PushReport,
): Promise<void> {
  const data = archive.blob(b); // checks the archive has it, even when the registry does too
  const head = await registry.call("HEAD", `/v2/${repository}/blobs/${b.digest}`, {}, [200, 404]);
  if (head.status === 200) {
    report.present.push(`${repository}@${b.digest}`);
    return;
  }
  const mount = mountFrom ? `?mount=${encodeURIComponent(b.digest)}&from=${encodeURIComponent(mountFrom)}` : "";
  const started = await registry.call("POST", `/v2/${repository}/blobs/uploads/${mount}`, {}, [201, 202]);
  if (started.status === 201) {
    report.mounted.push(`${repository}@${b.digest}`);
    return;
  }
  const location = started.headers.get("location");
  if (!location) throw new RigError(`pushing ${archive.path}: the registry started an upload without a Location`);
  const url = new URL(location, registry.base);
  url.searchParams.set("digest", b.digest);
  await registry.call(
    "PUT",
    url.toString(),
    { body: data, headers: { "content-type": "application/octet-stream", "content-length": String(b.size) } },
    [201],
  );
  report.uploaded.push(`${repository}@${b.digest}`);
}

async function pushManifest(
  registry: Registry,
  archive: OciArchive,
  repository: string,
  m: Descriptor,
  reference: string,
  report: PushReport,
  tag?: string,
): Promise<void> {
  const path = `/v2/${repository}/manifests/${reference}`;
  const head = await registry.call("HEAD", path, { headers: { accept: MANIFEST_TYPES.join(", ") } }, [200, 404]);
  if (head.status === 200 && head.headers.get("docker-content-digest") === m.digest) return;
  const put = await registry.call(
    "PUT",
    path,
    { body: await archive.blob(m).arrayBuffer(), headers: { "content-type": m.mediaType ?? MANIFEST_TYPES[0]! } },
    [201],
  );
  const digest = put.headers.get("docker-content-digest");
  if (digest && digest !== m.digest)
    throw new RigError(
      `pushing ${archive.path}: the registry stored ${repository}'s manifest as ${digest}, not ${m.digest}`,
    );
  if (tag) report.tagged.push(tag);
}
