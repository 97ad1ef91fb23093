// The rig for tests: a private rig directory owned by the test process, stopped in afterAll and,
// if the process is interrupted, by exit and signal handlers; orphans of killed runs are reaped.
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { stopCluster } from "./cluster.ts";
import { killRigNow, reapOrphanRigs, rigDown, rigUp, type Rig, type RigOptions } from "./rig.ts";

export const testRigRoot = join(tmpdir(), "liqo-rig-tests");

export interface TestRig extends Rig {
  client(name: string): KubeClient;
  down(): Promise<void>;
}

const live = new Set<Rig>();
let handlersInstalled = false;

function installHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", () => {
    for (const rig of live) killRigNow(rig);
  });
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(sig, () => {
      for (const rig of live) killRigNow(rig);
      process.exit(130);
    });
  }
}

export async function startTestRig(options: Omit<RigOptions, "dir" | "owner">): Promise<TestRig> {
  mkdirSync(testRigRoot, { recursive: true });
  await reapOrphanRigs(testRigRoot);
  installHandlers();
  const dir = mkdtempSync(join(testRigRoot, "rig-"));
  const log = process.env.RIG_VERBOSE ? (m: string) => console.error(`[rig] ${m}`) : undefined;
  const rig = await rigUp({ ...options, dir, owner: process.pid, progress: log });
  live.add(rig);
  const clients = new Map<string, KubeClient>();
  return {
    ...rig,
    client(name) {
      const cluster = rig.clusters.find((c) => c.name === name);
      if (!cluster) throw new Error(`no cluster ${name} in the test rig`);
      if (!clients.has(name)) clients.set(name, createKubeClient({ kubeconfig: cluster.kubeconfig }));
      return clients.get(name)!;
    },
    async down() {
      live.delete(rig);
      // Tests restart components (restartApiServer): the live pids are in memory, not in rig.json.
      await Promise.all(rig.clusters.map((c) => stopCluster(c)));
      await rigDown(dir);
    },
  };
}
