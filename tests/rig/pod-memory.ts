// The memory of a pod on a real rig node: its containers are host processes in the node's cgroup
// (cgroup v1, memory hierarchy under /<node netns>/kubepods/.../pod<uid>).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface PodMemory {
  /** VmRSS summed over the pod's processes (pause excluded); shared pages (the Bun binary) count in each. */
  rssMiB: number;
  /** The pod cgroup's total_rss: anonymous memory only. */
  cgroupRssMiB: number;
  processes: string[];
}

function findPodCgroup(dir: string, uid: string): string | undefined {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const path = join(dir, e.name);
    if (e.name === `pod${uid}`) return path;
    const deeper = findPodCgroup(path, uid);
    if (deeper) return deeper;
  }
  return undefined;
}

/** The host processes of a pod (pause excluded), found in its cgroup under the given node namespaces' cgroups; undefined when it has none there. */
export function podProcesses(
  podUid: string,
  nodeNetns: string[],
): { pid: number; comm: string; status: string }[] | undefined {
  const dir = podCgroup(podUid, nodeNetns);
  if (!dir) return undefined;
  const pids: number[] = [];
  const walk = (d: string) => {
    try {
      for (const p of readFileSync(join(d, "cgroup.procs"), "utf8").split("\n")) if (p) pids.push(Number(p));
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
    } catch {
      /* a container exited meanwhile */
    }
  };
  walk(dir);
  const out: { pid: number; comm: string; status: string }[] = [];
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const comm = /^Name:\s+(.+)$/m.exec(status)?.[1] ?? "?";
      if (comm !== "pause") out.push({ pid, comm, status }); // the sandbox is not the workload
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

function podCgroup(podUid: string, nodeNetns: string[]): string | undefined {
  return nodeNetns
    .map((n) => join("/sys/fs/cgroup/memory", n))
    .filter((r) => existsSync(r))
    .map((r) => findPodCgroup(r, podUid))
    .find(Boolean);
}

/** undefined when the pod has no cgroup under any of the given node namespaces' cgroups. */
export function podMemory(podUid: string, nodeNetns: string[]): PodMemory | undefined {
  const procs = podProcesses(podUid, nodeNetns);
  if (!procs) return undefined;
  let rssKiB = 0;
  const processes: string[] = [];
  for (const { comm, status } of procs) {
    const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0);
    rssKiB += kib;
    processes.push(`${comm} ${Math.round(kib / 1024)}`);
  }
  const stat = readFileSync(join(podCgroup(podUid, nodeNetns)!, "memory.stat"), "utf8");
  const cgroupRss = Number(/^total_rss (\d+)$/m.exec(stat)?.[1] ?? 0);
  return { rssMiB: Math.round(rssKiB / 1024), cgroupRssMiB: Math.round(cgroupRss / 2 ** 20), processes };
}
