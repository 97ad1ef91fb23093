// The route agent's underlay interface, detected against real interfaces: a node whose interface is
// named ens5 (as on many VMs) and holds the node's address gets ens5 without any setting; a wrong
// explicit name keeps `liqo route` unready, its reason naming the interface, the ones that exist and
// the value to change.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createIp, type IpAdapter } from "../../netfabric/os/ip.ts";
import { detectVtepDevice } from "../../netfabric/overlay/device.ts";
import { startRole, type RoleProcess } from "./fabric-rig.ts";
import { createLab, runner, waitFor, type Lab } from "./lab.ts";

let lab: Lab;
let node: string;
let ip: IpAdapter;
let dir: string;
let role: RoleProcess | undefined;

beforeAll(async () => {
  lab = await createLab();
  dir = mkdtempSync(join(tmpdir(), "vtep-device-"));
  try {
    node = await lab.netns("vtep");
    ip = createIp(runner, node);
    await ip.batch([
      "link add ens5 type veth peer name p5",
      "link set p5 up",
      "addr add 10.0.1.7/24 dev ens5",
      "link set ens5 up",
      "link add ens6 type veth peer name p6",
      "link set p6 up",
      "addr add 192.168.9.1/24 dev ens6",
      "link set ens6 up",
      "route add 198.51.100.0/24 via 192.168.9.2 dev ens6",
    ]);
  } catch (err) {
    await lab.cleanup();
    throw err;
  }
}, 30_000);

afterAll(async () => {
  await role?.kill("SIGKILL");
  await lab.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("VTEP device detection in a network namespace", () => {
  test("the interface holding the node's address: ens5", async () => {
    expect(await detectVtepDevice(ip, { address: "10.0.1.7" })).toEqual({ ok: true, dev: "ens5", how: "address" });
  });

  test("an address no interface holds: the interface of the route to it", async () => {
    expect(await detectVtepDevice(ip, { address: "198.51.100.4" })).toEqual({ ok: true, dev: "ens6", how: "route" });
  });

  test("an explicit name that exists is kept", async () => {
    expect(await detectVtepDevice(ip, { explicit: "ens6", address: "10.0.1.7" })).toEqual({
      ok: true,
      dev: "ens6",
      how: "explicit",
    });
  });

  test("nothing routes the address and there is no eth0: a clear failure", async () => {
    const got = await detectVtepDevice(ip, { address: "203.0.113.5" });
    expect(got).toEqual({
      ok: false,
      reason: expect.stringContaining("no interface holds or routes the node address 203.0.113.5"),
    });
  });

  test("liqo route with a wrong --vtep-device: the log and /readyz name it, the interfaces and the fix", async () => {
    // No API server is needed: the agent never starts, the admin API does.
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]",
        "users: [{name: u, user: {token: t}}]",
        "contexts: [{name: c, context: {cluster: c, user: u}}]",
        "current-context: c",
      ].join("\n"),
    );
    role = await startRole([
      "route",
      "--kubeconfig",
      kubeconfig,
      "--node-name",
      "n",
      "--netns",
      node,
      "--vtep-address",
      "10.0.1.7",
      "--vtep-device",
      "eth0",
      "--admin-address",
      "127.0.0.1:0",
    ]);
    const want = 'interface "eth0" (route.vtepDevice) does not exist on this node; interfaces: lo, p5, ens5, p6, ens6';
    // The check runs once the admin API is up: wait for its verdict, not for the first answer.
    const body = await waitFor("/readyz to name the missing interface", async () => {
      const res = await fetch(`${role!.url}/readyz`);
      expect(res.status).toBe(503);
      const b = (await res.json()) as { detail: string };
      return b.detail.includes("route.vtepDevice") ? b : undefined;
    });
    expect(body.detail).toContain(want);
    expect(body.detail).toContain("set route.vtepDevice");
    // The log is JSON: its quotes are escaped.
    const logged = want.slice(want.indexOf("(route.vtepDevice)"));
    await waitFor("the reason in the log", async () => (role!.output().includes(logged) ? true : undefined));
    expect(role.proc.exitCode).toBeNull();
  }, 60_000);
});
