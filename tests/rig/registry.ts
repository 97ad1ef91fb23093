// The rig's image registry, as real clusters have one: the distribution registry (Debian's
// docker-registry) serving plain HTTP on the rig bridge's address, port 5001, started and stopped
// with the rig. Every real node's containerd uses it as the mirror of each registry the rig's
// images name (hosts.toml per registry host, server = the rig's registry, so nothing leaves the
// machine), and its repositories are full image names: ghcr.io/liqo-bun/hello, docker.io/library/nginx.
//
// Its storage is a cache shared by the machine's rigs (~/.cache/liqo-bun/registry): the rig's own
// images are pushed at every start, and a push whose blobs and tag are there sends only HEADs.
// Tags are shared too, as on any registry: the last rig to push a name wins.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { RigError } from "./errors.ts";
import { extraImageRefs, rigImageRefs, withLock } from "./images.ts";
import { mirrorNamespace, mirrorRepository, pushArchive, type PushReport } from "./oci-push.ts";
import { isAlive, killGroup, killGroupNow, spawnDetached, tailFile } from "./process.ts";

/** Not 5000: the Debian package's own service (where one runs) listens on :5000 of every address. */
export const REGISTRY_PORT = 5001;

/** `image: nginx` on a real node runs the rig's hello image (an nginx): pushed under this name too. */
export const nginxAlias = "docker.io/library/nginx:latest";

/** Past this size, the next registry to start with no other one running empties the storage. */
const storageLimitBytes = 4 * 2 ** 30;

export interface RegistryState {
  /** host:port on the rig bridge; the URL is http://<address>. */
  address: string;
  /** The rig's files: config.yml, registry.log, hosts/ (containerd's config_path). */
  dir: string;
  hostsDir: string;
  storage: string;
  log: string;
  pid: number;
}

export function registryStorageDir(env: Record<string, string | undefined> = process.env): string {
  return (
    env.LIQO_RIG_REGISTRY ?? join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), ".cache"), "liqo-bun", "registry")
  );
}

export const registryUrl = (r: { address: string }) => `http://${r.address}`;

/** The registry hosts containerd sends to the rig's registry: every one the rig's images name. */
export function mirroredHosts(): string[] {
  const refs = [...Object.values(rigImageRefs), ...Object.values(extraImageRefs), nginxAlias];
  return [...new Set(refs.map((r) => mirrorRepository(r).host))].sort();
}

/** containerd's directory name for a registry host: host:port becomes host_port_. */
export const hostsDirName = (host: string) => host.replace(/:(\d+)$/, "_$1_");

/**
 * hosts.toml of one registry host: the rig's registry is its server (no fallback to the internet),
 * under /v2/<host>, so each upstream registry keeps its own namespace in the one registry.
 */
export function mirrorHostsToml(registryAddress: string, host: string): string {
  return `# The rig's registry (tests/rig/registry.ts) serves ${host}'s images.
server = "http://${registryAddress}/v2/${mirrorNamespace(host)}"
override_path = true
capabilities = ["pull", "resolve"]

# No other host: containerd 1.6 refuses a hosts.toml without this table ("invalid \`host\` tree").
[host]
`;
}

/** Writes hosts.toml for each host (containerd reads them at every pull: no restart needed). */
export function writeMirrorHosts(r: Pick<RegistryState, "hostsDir" | "address">, hosts: string[]): void {
  for (const host of hosts) {
    const dir = join(r.hostsDir, hostsDirName(host));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "hosts.toml"), mirrorHostsToml(r.address, host));
  }
}

export function registryConfig(address: string, storage: string): string {
  return `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${storage}
  delete:
    enabled: true
  # Several rigs' registries share this storage: none deletes another's uploads in flight.
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: ${address}
  secret: liqo-rig
`;
}

/** The rig's registry on `gateway` (its files under dir); written, not started. */
export function prepareRegistry(dir: string, gateway: string): RegistryState {
  const r: RegistryState = {
    address: `${gateway}:${REGISTRY_PORT}`,
    dir,
    hostsDir: join(dir, "hosts"),
    storage: registryStorageDir(),
    log: join(dir, "registry.log"),
    pid: 0,
  };
  mkdirSync(r.hostsDir, { recursive: true });
  writeFileSync(join(dir, "config.yml"), registryConfig(r.address, r.storage));
  writeMirrorHosts(r, mirroredHosts());
  return r;
}

function registryBinary(): string {
  const path = Bun.which("docker-registry") ?? Bun.which("registry");
  if (!path)
    throw new RigError(
      "the rig's registry needs docker-registry (the distribution registry): apt-get install docker-registry (scripts/setup.sh installs it)",
    );
  return path;
}

function blobBytes(storage: string): number {
  const root = join(storage, "docker/registry/v2/blobs/sha256");
  if (!existsSync(root)) return 0;
  let total = 0;
  for (const a of readdirSync(root))
    for (const b of readdirSync(join(root, a)))
      total += statSync(join(root, a, b, "data"), { throwIfNoEntry: false })?.size ?? 0;
  return total;
}

/**
 * Starts the registry and records it as a user of the shared storage. Under the storage's lock,
 * so that a storage past its limit is emptied only while no other rig's registry uses it.
 */
export async function startRegistry(r: RegistryState): Promise<void> {
  const bin = registryBinary();
  const users = join(r.storage, ".users");
  mkdirSync(users, { recursive: true });
  await withLock(
    r.storage,
    () => {},
    async () => {
      const live = readdirSync(users).filter((pid) => {
        if (isAlive(Number(pid))) return true;
        rmSync(join(users, pid), { force: true });
        return false;
      });
      if (!live.length && blobBytes(r.storage) > storageLimitBytes)
        rmSync(join(r.storage, "docker"), { recursive: true, force: true });
      r.pid = spawnDetached(bin, ["serve", join(r.dir, "config.yml")], r.log);
      writeFileSync(join(users, String(r.pid)), r.dir);
    },
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${registryUrl(r)}/v2/`).catch(() => undefined);
    if (res?.status === 200) return;
    if (!isAlive(r.pid) || Date.now() > deadline) {
      const why = isAlive(r.pid) ? "did not answer within 30 s" : "exited";
      killGroupNow(r.pid);
      throw new RigError(`the rig's registry on ${r.address} ${why}\n--- ${r.log} (tail) ---\n${tailFile(r.log)}`);
    }
    await Bun.sleep(50);
  }
}

export async function stopRegistry(r: RegistryState): Promise<void> {
  await killGroup(r.pid, 3000);
  rmSync(join(r.storage, ".users", String(r.pid)), { force: true });
}

export interface PushedImage {
  ref: string;
  report: PushReport;
}

/** The rig's images, each under its name (hello also as nginx), into the rig's registry. */
export async function pushRigImages(
  r: RegistryState,
  images: { ref: string; archive: string }[],
): Promise<PushedImage[]> {
  return Promise.all(
    images.map(async (i) => ({
      ref: i.ref,
      report: await pushArchive({
        archive: i.archive,
        registry: registryUrl(r),
        names: i.ref === rigImageRefs.hello ? [i.ref, nginxAlias] : [i.ref],
      }),
    })),
  );
}
