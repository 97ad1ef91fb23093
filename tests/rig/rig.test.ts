// The rig's own promises: nothing left behind, also when its owner dies; clear messages when a
// port is taken, a binary is missing or a component does not come up.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rigBinDir } from "./binaries.ts";
import { prepareCluster, startCluster, stopCluster } from "./cluster.ts";
import { RigError } from "./errors.ts";
import { allocatePorts, portIsFree } from "./ports.ts";
import { claimRigNetwork, removeRigNetworkNow, rigNetworkIsOurs } from "./nodes.ts";
import { isAlive } from "./process.ts";
import { loadRig, reapOrphanRigs, rigDown, rigProcesses, rigUp } from "./rig.ts";
import { startTestRig, testRigRoot } from "./testing.ts";
import { waitFor } from "../support/wait.ts";

const scratch = mkdtempSync(join(tmpdir(), "rig-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(port, "127.0.0.1", () => resolve(srv));
  });
}

describe("rig lifecycle", () => {
  test("down stops every process, frees every port and removes the directory", async () => {
    const rig = await startTestRig({ clusters: 1, nodes: 1 });
    const procs = rigProcesses(rig);
    expect(procs.map((p) => p.component).sort()).toEqual([
      "etcd",
      "kube-apiserver",
      "kube-controller-manager",
      "kube-scheduler",
      "kwok",
    ]);
    expect(procs.every((p) => p.alive)).toBe(true);
    const ports = Object.values(rig.clusters[0]!.ports);
    await rig.down();
    expect(procs.filter((p) => isAlive(p.pid))).toEqual([]);
    for (const port of ports) expect(await portIsFree(port)).toBe(true);
    expect(existsSync(rig.dir)).toBe(false);
  }, 300_000);

  test("a rig whose owner was killed is reaped by the next start: no processes, no directory", async () => {
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "fixtures/hold-rig.ts")], {
      stdout: "pipe",
      stderr: "ignore",
    });
    const reader = child.stdout.getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    const dir = /ready (\S+)/.exec(out)?.[1];
    expect(dir).toBeDefined();
    const rig = loadRig(dir!)!;
    const pids = rigProcesses(rig).map((p) => p.pid);
    child.kill("SIGKILL");
    await child.exited;
    // The components were detached: they outlive their owner until someone reaps them.
    expect(pids.some(isAlive)).toBe(true);
    const reaped = await reapOrphanRigs(testRigRoot);
    expect(reaped).toContain(dir!);
    await waitFor("every orphaned component to be gone", () => pids.every((p) => !isAlive(p)), { timeoutMs: 30_000 });
    expect(existsSync(dir!)).toBe(false);
  }, 300_000);
});

describe("rigs side by side", () => {
  test("reaping a dead rig that recorded a bridge another rig has claimed since leaves that rig's bridge, namespaces and cgroups alone", async () => {
    const root = mkdtempSync(join(scratch, "reap-"));
    const live = join(root, "live");
    const net = claimRigNetwork(live);
    try {
      // A rig that died half-way with the same bridge recorded (its own start freed it, then the
      // live one claimed it), and a node namespace of the live rig by that bridge's naming.
      const netns = `lrig${net.index}-rome-node-1`;
      Bun.spawnSync(["ip", "netns", "add", netns]);
      const dead = join(root, "dead");
      mkdirSync(dead);
      const deadRig = {
        dir: dead,
        owner: 2 ** 22 + 1, // above pid_max's default: never a live process
        kubeconfigDir: join(dead, "kubeconfigs"),
        bin: rigBinDir(),
        clusters: [],
        network: net,
      };
      writeFileSync(join(dead, "rig.json"), JSON.stringify(deadRig));
      expect(rigNetworkIsOurs(net, dead)).toBe(false);
      expect(rigNetworkIsOurs(net, live)).toBe(true);
      expect(await reapOrphanRigs(root)).toContain(dead);
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(`/sys/class/net/${net.bridge}`)).toBe(true);
      expect(existsSync(`/var/run/netns/${netns}`)).toBe(true);
      Bun.spawnSync(["ip", "netns", "del", netns]);
      // Once the bridge is gone, nobody holds its names: a dead rig's leftovers are cleaned up.
      removeRigNetworkNow(net);
      expect(rigNetworkIsOurs(net, dead)).toBe(true);
    } finally {
      removeRigNetworkNow(net);
    }
  });
});

describe("clear messages", () => {
  test("a taken port with --base-port names the port and the fix", async () => {
    const [port] = await allocatePorts(1);
    const srv = await occupy(port!);
    try {
      const err = await rigUp({ clusters: 1, basePort: port, dir: join(scratch, "taken") }).catch((e) => e);
      expect(err).toBeInstanceOf(RigError);
      expect(err.message).toContain(`port ${port} on 127.0.0.1 is taken`);
      expect(err.message).toContain("--base-port");
    } finally {
      srv.close();
    }
    expect(existsSync(join(scratch, "taken"))).toBe(false);
  });

  test("missing binaries say which and how to build them", () => {
    expect(() => rigBinDir({ LIQO_RIG_CACHE: join(scratch, "empty-cache"), HOME: scratch })).toThrow(
      /missing in .*: etcd, kube-apiserver.*run: bash tests\/rig\/build.sh/,
    );
  });

  test("a component that cannot start fails at once with the reason and its log", async () => {
    const dir = join(scratch, "broken");
    const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok] = await allocatePorts(6);
    const cluster = prepareCluster(
      { name: "broken", index: 0, nodes: 1, podCIDR: "10.150.0.0/16", serviceCIDR: "10.151.0.0/16" },
      dir,
      {
        etcdClient: etcdClient!,
        etcdPeer: etcdPeer!,
        apiserver: apiserver!,
        controllerManager: controllerManager!,
        scheduler: scheduler!,
        kwok: kwok!,
      },
    );
    const srv = await occupy(etcdClient!); // someone grabs etcd's port after it was chosen
    try {
      const err = await startCluster(cluster, rigBinDir(), () => {}).catch((e) => e);
      expect(err).toBeInstanceOf(RigError);
      expect(err.message).toContain("etcd of cluster broken exited during start-up");
      expect(err.message).toContain("a port it needs is taken");
      expect(err.message).toMatch(/address already in use/);
    } finally {
      srv.close();
      await stopCluster(cluster);
    }
  }, 120_000);

  test("invalid rig options are refused before anything starts", async () => {
    await expect(rigUp({ clusters: 0 })).rejects.toThrow(/--clusters must be between 1 and 8/);
    await expect(rigUp({ clusters: 2, names: ["a"] })).rejects.toThrow(/--names lists 1 name/);
    await expect(rigUp({ clusters: 1, names: ["Bad_Name"] })).rejects.toThrow(/not a valid DNS label/);
    await expect(rigUp({ clusters: 2, names: ["x", "x"] })).rejects.toThrow(/must be unique/);
  });

  test("down on a directory without a rig is a no-op", async () => {
    expect(await rigDown(join(scratch, "nothing"))).toEqual([]);
  });
});
