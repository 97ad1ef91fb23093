// A Debian root file system for an image, made with debootstrap (no container engine needed):
// built once per suite, package set and extra users into a cache, renamed in when complete so an
// interrupted build never looks finished. Used by the liqo image (build-image.ts) and the rig's
// workload image (tests/rig/images.ts).
// Another CPU's root file system (arm64 on an amd64 machine, for the release's multi-arch image) is
// debootstrap's both stages: the second runs that CPU's maintainer scripts in a chroot, through
// qemu-user-static registered with binfmt_misc (ensureForeignArch: registered here if it is not).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const DEBIAN_SUITE = "bookworm";
const MIRROR = () => process.env.LIQO_DEBIAN_MIRROR ?? "http://deb.debian.org/debian";

/** Paths every image leaves to the runtime (device nodes, kernel file systems, scratch space). */
export const RUNTIME_PATHS = ["./dev/*", "./proc/*", "./sys/*", "./run/*", "./tmp/*"];

/** Debian's (and OCI's) name of a CPU: amd64 or arm64. */
export type DebianArch = "amd64" | "arm64";
export const hostDebianArch = (): DebianArch => (process.arch === "arm64" ? "arm64" : "amd64");
const QEMU: Record<DebianArch, string> = { amd64: "x86_64", arm64: "aarch64" };

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
  /** The CPU the root file system is for (default: this machine's). */
  arch?: DebianArch;
  say: (m: string) => void;
}

async function run(cmd: string[], what: string): Promise<void> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0)
    throw new Error(`${what} failed (exit ${p.exitCode}):\n${(err || out).trim().slice(-3000)}`);
}

/**
 * The cache key of a root file system: what debootstrap is asked for, nothing else. amd64 adds
 * nothing to the key (the keys of the root file systems built before arm64 existed stay valid).
 */
export function debianRootfsKey(packages: string[], users: DebianUser[] = [], arch: DebianArch = "amd64"): string {
  const wanted = [...packages].sort().join(",");
  const who = users.map((u) => `${u.name}:${u.uid}`).join(",");
  return new Bun.CryptoHasher("sha256")
    .update(`${DEBIAN_SUITE} minbase ${wanted}${who ? ` users ${who}` : ""}${arch === "amd64" ? "" : ` arch ${arch}`}`)
    .digest("hex")
    .slice(0, 12);
}

export async function debianRootfs(o: DebianRootfsOptions): Promise<{ dir: string; key: string }> {
  const packages = [...o.packages].sort();
  const arch = o.arch ?? hostDebianArch();
  const key = debianRootfsKey(packages, o.users, arch);
  const dir = join(o.cache, `rootfs-${key}`);
  if (existsSync(join(dir, "etc/debian_version"))) {
    o.say(`Debian ${DEBIAN_SUITE} ${arch} root file system: cached (${dir})`);
    return { dir, key };
  }
  if (process.getuid?.() !== 0)
    throw new Error(
      `building the Debian root file system needs root (debootstrap creates device nodes and chowns files): run as root once; it is cached in ${dir}`,
    );
  if (!Bun.which("debootstrap"))
    throw new Error("debootstrap is not installed: apt-get install debootstrap (scripts/setup.sh installs it)");
  const foreign = arch !== hostDebianArch();
  if (foreign) await ensureForeignArch(arch, o.say);
  mkdirSync(o.cache, { recursive: true });
  // One build per root file system at a time (test files in two shards may both want it): a second
  // caller waits, then finds it built.
  return withLock(`${dir}.lock`, o.say, async () => {
    if (existsSync(join(dir, "etc/debian_version"))) {
      o.say(`Debian ${DEBIAN_SUITE} ${arch} root file system: built meanwhile by another process (${dir})`);
      return { dir, key };
    }
    await bootstrap(o, { dir, packages, arch, foreign });
    return { dir, key };
  });
}

async function bootstrap(
  o: DebianRootfsOptions,
  { dir, packages, arch, foreign }: { dir: string; packages: string[]; arch: DebianArch; foreign: boolean },
): Promise<void> {
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  o.say(
    `Debian ${DEBIAN_SUITE} ${arch} root file system: debootstrap --variant=minbase with ${packages.join(" ")} (${foreign ? "10-20 minutes under qemu" : "a few minutes"}, once)`,
  );
  await run(
    [
      "debootstrap",
      `--arch=${arch}`,
      "--variant=minbase",
      `--include=${packages.join(",")}`,
      DEBIAN_SUITE,
      partial,
      MIRROR(),
    ],
    `debootstrap --arch=${arch}`,
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
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Runs `f` holding `lock` (a file with the holder's pid; one left by a dead process is taken over). */
export async function withLock<T>(lock: string, say: (m: string) => void, f: () => Promise<T>): Promise<T> {
  let waiting = false;
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: "wx" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = Number(readFileSync(lock, "utf8").trim());
    if (!holder || !alive(holder)) {
      rmSync(lock, { force: true });
      continue;
    }
    if (!waiting) say(`another process (pid ${holder}) is building it; waiting (${lock})`);
    waiting = true;
    await Bun.sleep(2000);
  }
  try {
    return await f();
  } finally {
    rmSync(lock, { force: true });
  }
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

const BINFMT = "/proc/sys/fs/binfmt_misc";

/** Whether this machine runs `arch`'s programs: its own CPU, or qemu registered with binfmt_misc (F: opened at registration, so it also runs in a chroot). */
export function runsForeignArch(arch: DebianArch): boolean {
  if (arch === hostDebianArch()) return true;
  const entry = join(BINFMT, `qemu-${QEMU[arch]}`);
  if (!existsSync(entry)) return false;
  const text = readFileSync(entry, "utf8");
  return /^enabled$/m.test(text) && /^flags: \S*F/m.test(text);
}

/**
 * Makes `arch`'s programs run here for debootstrap's second stage: qemu-user-static's binfmt_misc
 * entry (from /usr/lib/binfmt.d, as systemd-binfmt would load it) is registered if it is missing,
 * mounting binfmt_misc first if needed. Needs root and the qemu-user-static package.
 */
export async function ensureForeignArch(arch: DebianArch, say: (m: string) => void): Promise<void> {
  if (runsForeignArch(arch)) return;
  const conf = `/usr/lib/binfmt.d/qemu-${QEMU[arch]}.conf`;
  if (!existsSync(conf))
    throw new Error(
      `building a Debian ${arch} root file system on ${hostDebianArch()} runs ${arch} programs through qemu: apt-get install qemu-user-static (scripts/setup.sh installs it); ${conf} is missing`,
    );
  if (!existsSync(join(BINFMT, "register"))) {
    say(`mounting binfmt_misc at ${BINFMT} (to run ${arch} programs through qemu)`);
    await run(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT], "mount binfmt_misc").catch((err: Error) => {
      throw new Error(
        `${err.message}\nbinfmt_misc cannot be mounted here (a container without CAP_SYS_ADMIN?): register qemu on the host (docker run --privileged tonistiigi/binfmt --install arm64, or apt-get install qemu-user-static binfmt-support there)`,
      );
    });
  }
  const entry = readFileSync(conf, "utf8").trim();
  say(`registering ${conf} with binfmt_misc (qemu-${QEMU[arch]}-static runs ${arch} programs)`);
  writeFileSync(join(BINFMT, "register"), entry);
  if (!runsForeignArch(arch))
    throw new Error(`registered ${conf} but ${BINFMT}/qemu-${QEMU[arch]} is not enabled with flag F: check dmesg`);
}
