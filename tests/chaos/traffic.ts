// Faults on real nodes during a steady stream of HTTP requests from a pod in one cluster to a
// Service backed by a pod in the other: the helpers the in-cluster fabric suite uses to kill liqo's
// pods' processes as `kill -9` would (the kubelet restarts the container, the pod stays), to
// black-hole the link between two clusters, and to read what the stream saw.
import { podProcesses } from "../rig/pod-memory.ts";
import type { Rig } from "../rig/rig.ts";

/**
 * SIGKILL to every process of the pod (its pause process excepted), found in the pod's cgroup under
 * the given real nodes; returns how many there were (0: the pod runs nothing there).
 */
export function killPod(uid: string, nodeNetns: string[]): number {
  const procs = podProcesses(uid, nodeNetns) ?? [];
  for (const { pid } of procs) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  return procs.length;
}

const TABLE = "liqo-chaos";

function nft(netns: string, script: string): void {
  const res = Bun.spawnSync(["nsenter", `--net=/var/run/netns/${netns}`, "--", "nft", "-f", "-"], {
    stdin: Buffer.from(script),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (res.exitCode !== 0) throw new Error(`nft in ${netns}: ${res.stderr.toString().trim()}\n${script}`);
}

/**
 * Drops every packet between the real nodes of two clusters, and from each cluster's nodes to the
 * other's API server (on the host's bridge address): the link between the clusters is dark, each
 * cluster still works on its own. Returns the function that restores the link.
 */
export function blackHole(rig: Rig, a: string, b: string): () => void {
  const cluster = (name: string) => {
    const c = rig.clusters.find((x) => x.name === name);
    if (!c?.realNodeStates?.length) throw new Error(`cluster ${name} has no real nodes to cut off`);
    return c;
  };
  const host = rig.network?.gateway;
  if (!host) throw new Error("the rig has no host bridge");
  const pairs = [
    [cluster(a), cluster(b)],
    [cluster(b), cluster(a)],
  ] as const;
  const cut: string[] = [];
  const restore = () => {
    for (const netns of cut)
      Bun.spawnSync(["nsenter", `--net=/var/run/netns/${netns}`, "--", "nft", "delete", "table", "inet", TABLE]);
  };
  try {
    for (const [here, there] of pairs) {
      const peers = there.realNodeStates!.map((n) => n.ip).join(", ");
      const api = there.ports.apiserver;
      for (const node of here.realNodeStates!) {
        nft(
          node.netns,
          `table inet ${TABLE} {
  chain pre {
    type filter hook prerouting priority -300; policy accept;
    ip saddr { ${peers} } drop
    ip daddr { ${peers} } drop
    ip daddr ${host} tcp dport ${api} drop
  }
  chain out {
    type filter hook output priority -300; policy accept;
    ip daddr { ${peers} } drop
    ip daddr ${host} tcp dport ${api} drop
  }
}
`,
        );
        cut.push(node.netns);
      }
    }
  } catch (err) {
    restore();
    throw err;
  }
  return restore;
}

/** One request of the stream: when it started (ms) and its HTTP status ("000": no answer). */
export interface StreamSample {
  at: number;
  code: string;
}

export function parseStream(text: string): StreamSample[] {
  return text
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length === 2 && /^\d+$/.test(f[0]!))
    .map(([at, code]) => ({ at: Number(at), code: code! }));
}

/** What a window of the stream saw: requests, failures, the longest run of failures in seconds. */
export function summarize(samples: StreamSample[], from: number, to: number) {
  const window = samples.filter((s) => s.at >= from && s.at < to);
  let longest = 0;
  let longestFrom: number | undefined;
  let runStart: number | undefined;
  const close = (end: number) => {
    if (runStart !== undefined && end - runStart > longest) {
      longest = end - runStart;
      longestFrom = runStart;
    }
    runStart = undefined;
  };
  for (const s of window) {
    if (s.code !== "200") runStart ??= s.at;
    else close(s.at);
  }
  close(to);
  return {
    requests: window.length,
    failed: window.filter((s) => s.code !== "200").length,
    longestOutageSeconds: longest / 1000,
    /** When the longest outage began (its first failed request), if there was one. */
    longestOutageFrom: longestFrom,
  };
}

/** The time after `from` at which the stream has answered `n` requests in a row, if it has. */
export function recoveredAt(samples: StreamSample[], from: number, n = 30): number | undefined {
  let ok = 0;
  let first: number | undefined;
  for (const s of samples) {
    if (s.at < from) continue;
    if (s.code === "200") {
      first ??= s.at;
      if (++ok >= n) return first;
    } else {
      ok = 0;
      first = undefined;
    }
  }
  return undefined;
}
