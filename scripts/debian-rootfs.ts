// A Debian root file system for an image, made with debootstrap (no container engine needed):
// built once per suite, package set and extra users into a cache, renamed in when complete so an
// interrupted build never looks finished. Used by the liqo image (build-image.ts) and the rig's
// workload image (tests/rig/images.ts).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const DEBIAN_SUITE = "bookworm";
const MIRROR = () => process.env.LIQO_DEBIAN_MIRROR ?? "http://deb.debian.org/debian";

/** Paths every image leaves to the runtime (device nodes, kernel file systems, scratch space). */
export const RUNTIME_PATHS = ["./dev/*", "./proc/*", "./sys/*", "./run/*", "./tmp/*"];

export interface DebianUser {
  name: string;
  uid: number;
}
export interface DebianRootfsOptions {
  /** The folder the root file system is cached in, as rootfs-<key>. */
  cache: string;
  packages: string[];
  /** Users to add (with a group of the same id and a home), e.g. oven/bun's uid 1000. */
  users?: DebianUser[];
  say: (m: string) => void;
}

async function run(cmd: string[], what: string): Promise<void> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0)
    throw new Error(`${what} failed (exit ${p.exitCode}):\n${(err || out).trim().slice(-3000)}`);
}

/** The cache key of a root file system: what debootstrap is asked for, nothing else. */
export function debianRootfsKey(packages: string[], users: DebianUser[] = []): string {
  const wanted = [...packages].sort().join(",");
  const who = users.map((u) => `${u.name}:${u.uid}`).join(",");
  return new Bun.CryptoHasher("sha256")
    .update(`${DEBIAN_SUITE} minbase ${wanted}${who ? ` users ${who}` : ""}`)
    .digest("hex")
    .slice(0, 12);
}

export async function debianRootfs(o: DebianRootfsOptions): Promise<{ dir: string; key: string }> {
  const packages = [...o.packages].sort();
  const key = debianRootfsKey(packages, o.users);
  const dir = join(o.cache, `rootfs-${key}`);
  if (existsSync(join(dir, "etc/debian_version"))) {
    o.say(`Debian ${DEBIAN_SUITE} root file system: cached (${dir})`);
    return { dir, key };
  }
  if (process.getuid?.() !== 0)
    throw new Error(
      `building the Debian root file system needs root (debootstrap creates device nodes and chowns files): run as root once; it is cached in ${dir}`,
    );
  if (!Bun.which("debootstrap"))
    throw new Error("debootstrap is not installed: apt-get install debootstrap (scripts/setup.sh installs it)");
  mkdirSync(o.cache, { recursive: true });
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  o.say(
    `Debian ${DEBIAN_SUITE} root file system: debootstrap --variant=minbase with ${packages.join(" ")} (a few minutes, once)`,
  );
  await run(
    ["debootstrap", "--variant=minbase", `--include=${packages.join(",")}`, DEBIAN_SUITE, partial, MIRROR()],
    "debootstrap",
  );
  // As a Dockerfile's `rm -rf /var/lib/apt/lists/*`; plus debootstrap's own leftovers. Folders stay
  // (nginx, for one, opens /var/log/nginx/error.log before it reads its configuration).
  for (const d of ["var/lib/apt/lists", "var/cache/apt/archives", "var/log"]) {
    await run(["find", join(partial, d), "-mindepth", "1", "-type", "f", "-delete"], `clean ${d}`);
  }
  rmSync(join(partial, "var/cache/apt/pkgcache.bin"), { force: true });
  rmSync(join(partial, "var/cache/apt/srcpkgcache.bin"), { force: true });
  for (const u of o.users ?? []) await addUser(partial, u);
  renameSync(partial, dir);
  return { dir, key };
}

async function addUser(rootfs: string, u: DebianUser): Promise<void> {
  const passwd = join(rootfs, "etc/passwd");
  if (
    readFileSync(passwd, "utf8")
      .split("\n")
      .some((l) => l.split(":")[2] === String(u.uid))
  )
    return;
  writeFileSync(passwd, `${readFileSync(passwd, "utf8")}${u.name}:x:${u.uid}:${u.uid}::/home/${u.name}:/bin/sh\n`);
  const group = join(rootfs, "etc/group");
  writeFileSync(group, `${readFileSync(group, "utf8")}${u.name}:x:${u.uid}:\n`);
  mkdirSync(join(rootfs, "home", u.name), { recursive: true });
  await run(["chown", `${u.uid}:${u.uid}`, join(rootfs, "home", u.name)], `chown /home/${u.name}`);
}
