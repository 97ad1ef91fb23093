// Finds (or builds) the upstream binaries the rig runs: see build.sh and versions.env.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { RigError } from "./errors.ts";

/**
 * What a rig cluster runs (kubelet, kube-proxy and coredns for real nodes, coredns inside an image);
 * build.sh also builds kubectl and helm for the people and charts using it.
 */
export const rigBinaries = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
  "kubelet",
  "kube-proxy",
  "coredns",
] as const;
export type RigBinary = (typeof rigBinaries)[number];

const here = import.meta.dir;

export function rigVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(here, "versions.env"), "utf8").split("\n")) {
    const m = /^([A-Z0-9_]+)=(\S+)/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

export function binaryCacheDir(env: Record<string, string | undefined> = process.env): string {
  const v = rigVersions();
  const root =
    env.LIQO_RIG_CACHE ?? join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), ".cache"), "liqo-bun", "rig");
  // The same key as build.sh's.
  return join(
    root,
    `k8s-${v.K8S_VERSION}_etcd-${v.ETCD_VERSION}_kwok-${v.KWOK_VERSION}_helm-${v.HELM_VERSION}_coredns-${v.COREDNS_VERSION}`,
  );
}

/** The bin directory when every binary is built; a RigError naming the missing ones otherwise. */
export function rigBinDir(env: Record<string, string | undefined> = process.env): string {
  const dir = binaryCacheDir(env);
  const bin = join(dir, "bin");
  const missing = rigBinaries.filter((b) => !existsSync(join(bin, b)));
  if (missing.length) {
    throw new RigError(
      `the rig's binaries are not built (missing in ${bin}: ${missing.join(", ")}); run: bash tests/rig/build.sh`,
    );
  }
  return bin;
}

/** Runs build.sh (a no-op when the cache is complete), streaming its progress to stderr. */
export async function ensureRigBinaries(): Promise<string> {
  try {
    return rigBinDir();
  } catch {
    const proc = Bun.spawn(["bash", join(here, "build.sh")], { stdout: "pipe", stderr: "inherit" });
    const out = await new Response(proc.stdout).text();
    if ((await proc.exited) !== 0) {
      throw new RigError(
        `building the rig's binaries failed (exit ${proc.exitCode}); see the output above, then run: bash tests/rig/build.sh`,
      );
    }
    return out.trim().split("\n").pop()!;
  }
}
