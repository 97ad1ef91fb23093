// The rig's images (images.ts), built here and run without Kubernetes: a private containerd (the
// same Debian package and CRI setting the real nodes use) imports every archive, and ctr runs each
// image's programs: the workload's tools and its page, the pause binary's signals and reaping,
// CoreDNS answering a query, the liqo image's gateway tools.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import {
  archiveRefs,
  checkoutKey,
  ctrPath,
  ensureImages,
  ensureRigImages,
  imageCacheDir,
  importImages,
  normalizeRef,
  rigImageRefs,
} from "./images.ts";
import { makeLayer, writeOciArchive } from "../../scripts/oci-archive.ts";
import { waitFor } from "../support/wait.ts";

setDefaultTimeout(90_000);
const tmp = mkdtempSync(join(tmpdir(), "liqo-images-test-"));
const socket = join(tmp, "containerd.sock");
const runcRoot = join(tmp, "runc");
let images: { ref: string; archive: string }[] = [];
let containerd: ReturnType<typeof Bun.spawn> | undefined;
let ids = 0;

interface Result {
  code: number;
  out: string;
  err: string;
}

async function sh(cmd: string[]): Promise<Result> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

const ctr = (...args: string[]) => sh([ctrPath(), "--address", socket, "-n", "k8s.io", ...args]);
const id = (what: string) => `${what}-${++ids}`;
/** `ctr run --rm`, in the foreground; ctr 1.6's `args` replace the image's entrypoint and command both. */
const runImage = (ref: string, args: string[], flags: string[] = []) =>
  ctr("run", "--rm", "--runc-root", runcRoot, ...flags, ref, id("run"), ...args);
/** The image configuration (Entrypoint, Cmd, User...) inside an archive, read as containerd would. */
async function imageConfig(archive: string): Promise<Record<string, unknown>> {
  const member = async (name: string) => JSON.parse((await sh(["tar", "-xOf", archive, name])).out);
  const index = await member("index.json");
  const manifest = await member(`blobs/sha256/${index.manifests[0].digest.slice(7)}`);
  return (await member(`blobs/sha256/${manifest.config.digest.slice(7)}`)).config;
}
const ok = (r: Result) => (r.code === 0 ? r : Promise.reject(new Error(`exit ${r.code}: ${r.err || r.out}`)));

beforeAll(async () => {
  const started = performance.now();
  images = await ensureRigImages((m) => console.error(`[images] ${m}`));
  console.error(`[images] ready in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  // restrict_oom_score_adj: runc may not lower its OOM score here (no CAP_SYS_RESOURCE in the VM).
  writeFileSync(
    join(tmp, "config.toml"),
    [
      "version = 2",
      `root = "${tmp}/root"`,
      `state = "${tmp}/state"`,
      "[grpc]",
      `  address = "${socket}"`,
      '[plugins."io.containerd.grpc.v1.cri"]',
      "  restrict_oom_score_adj = true",
      `  sandbox_image = "${rigImageRefs.pause}"`,
      '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
      "  SystemdCgroup = false",
      `  Root = "${runcRoot}"`,
      "",
    ].join("\n"),
  );
  const log = Bun.file(join(tmp, "containerd.log"));
  containerd = Bun.spawn(["containerd", "--config", join(tmp, "config.toml")], { stdout: log, stderr: log });
  await waitFor(
    "containerd to answer on its socket",
    async () => {
      if (containerd!.exitCode !== null)
        throw new Error(
          `containerd exited ${containerd!.exitCode}: ${readFileSync(join(tmp, "containerd.log"), "utf8").slice(-1500)}`,
        );
      return (await ctr("version")).code === 0;
    },
    { timeoutMs: 30_000 },
  );
  await importImages(
    socket,
    images.map((i) => i.archive),
  );
}, 40 * 60_000);

afterAll(async () => {
  if (containerd) {
    const tasks = await ctr("tasks", "ls", "-q");
    for (const t of tasks.out.split("\n").filter(Boolean)) await ctr("tasks", "kill", "-s", "SIGKILL", t);
    for (const t of tasks.out.split("\n").filter(Boolean))
      await waitFor(
        `task ${t} to stop`,
        async () => (await ctr("tasks", "delete", t)).code === 0 || !(await ctr("tasks", "ls", "-q")).out.includes(t),
        { timeoutMs: 10_000 },
      ).catch(() => {});
    for (const c of (await ctr("containers", "ls", "-q")).out.split("\n").filter(Boolean))
      await ctr("containers", "delete", c);
    containerd.kill("SIGTERM");
    await containerd.exited;
  }
  // The shims of this containerd outlive it; they are ours because their command line names our socket.
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (cmdline.startsWith("/usr/bin/containerd-shim") && cmdline.includes(socket))
      process.kill(Number(pid), "SIGKILL");
  }
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(`${tmp}/`));
  for (const m of mounts.sort((a, b) => b.length - a.length)) await sh(["umount", "-l", m]);
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("the archives", () => {
  test("there is one per image, named as pods refer to it", async () => {
    expect(images.map((i) => i.ref).sort()).toEqual(Object.values(rigImageRefs).sort());
    for (const i of images) expect(await archiveRefs(i.archive)).toEqual([i.ref]);
  });

  test("a warm build reuses every archive; the liqo image's is the checkout's", async () => {
    const started = performance.now();
    const again = await ensureImages(["pause", "hello", "coredns"], () => {});
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(again).toEqual(images.filter((i) => i.ref !== rigImageRefs.liqo));
    // Each archive handed out is marked used, so another checkout's prune spares it until imported.
    for (const i of again) expect(statSync(i.archive).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
    // Not compared with beforeAll's: other people may edit the checkout while this runs.
    const key = await checkoutKey();
    const [liqo] = await ensureImages(["liqo"], () => {});
    expect(liqo!.archive).toBe(join(imageCacheDir(), `liqo-${key}.oci.tar`));
  });

  test("every image's configuration runs what its pods expect", async () => {
    const expected = {
      [rigImageRefs.pause]: { Entrypoint: ["/pause"], User: "65535:65535" },
      [rigImageRefs.hello]: { Cmd: ["nginx", "-g", "daemon off;"], User: "0:0" },
      [rigImageRefs.coredns]: { Entrypoint: ["/coredns"], Cmd: ["-conf", "/etc/coredns/Corefile"], User: "0:0" },
      [rigImageRefs.liqo]: { Entrypoint: ["bun", "cli/liqo.ts"], User: "1000", WorkingDir: "/liqo" },
    };
    for (const i of images)
      expect({ ref: i.ref, ...(await imageConfig(i.archive)) }).toMatchObject({ ref: i.ref, ...expected[i.ref] });
  });

  test("containerd lists every imported image in CRI's namespace", async () => {
    const listed = (await ok(await ctr("images", "ls", "-q"))).out.split("\n");
    for (const ref of Object.values(rigImageRefs)) expect(listed).toContain(ref);
  });

  test("an import into a containerd that is not there names the archive and the socket", async () => {
    const missing = join(tmp, "no-such.sock");
    const err = await importImages(missing, [images[0]!.archive]).catch((e: Error) => e);
    expect(String(err)).toContain(missing);
    expect(String(err)).toContain(images[0]!.archive);
  });

  test("docker's short names are read as containerd stores them", () => {
    expect(normalizeRef("nginx")).toBe("docker.io/library/nginx:latest");
    expect(normalizeRef("me/app:2")).toBe("docker.io/me/app:2");
    expect(normalizeRef("localhost:5000/app")).toBe("localhost:5000/app:latest");
    expect(normalizeRef("ghcr.io/liqo-bun/hello:0.1.0")).toBe("ghcr.io/liqo-bun/hello:0.1.0");
  });
});

describe("rig image import", () => {
  test("puts a user's archive into the containerd of every real node of the rig", async () => {
    const stage = join(tmp, "mine");
    mkdirSync(join(stage, "data"), { recursive: true });
    writeFileSync(join(stage, "data/hello.txt"), "mine\n");
    const ref = `example.test/mine:${Date.now()}`;
    const archive = join(tmp, "mine.oci.tar");
    const layer = await makeLayer(stage, join(tmp, "mine.tar.gz"), { comment: "a user's file" });
    await writeOciArchive({
      out: archive,
      layers: [layer],
      ref,
      work: join(tmp, "mine-work"),
      config: { user: "0", workingDir: "/", entrypoint: ["/bin/true"], env: [], labels: {} },
    });
    // A rig as `rig up --real-nodes` records it, both nodes served by this test's containerd.
    const dir = join(tmp, "rig");
    mkdirSync(dir);
    const node = (name: string) => ({
      name,
      cluster: "rome",
      netns: name,
      ip: "",
      hostVeth: "",
      dir,
      containerdSocket: socket,
      pids: {},
    });
    writeFileSync(
      join(dir, "rig.json"),
      JSON.stringify({
        dir,
        owner: 0,
        kubeconfigDir: dir,
        bin: "",
        clusters: [{ name: "rome", realNodeStates: [node("rome-node-1"), node("rome-node-2")] }],
      }),
    );
    const r = await sh([process.execPath, join(import.meta.dir, "cli.ts"), "image", "import", archive, "--dir", dir]);
    expect(r.out).toContain(`rome-node-1          ${ref}`);
    expect(r.out).toContain(`rome-node-2          ${ref}`);
    expect(r.code).toBe(0);
    expect((await ctr("images", "ls", "-q")).out.split("\n")).toContain(ref);
  });

  test("says so when the rig has no real nodes", async () => {
    const dir = join(tmp, "kwok-rig");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "rig.json"),
      JSON.stringify({ dir, owner: 0, kubeconfigDir: dir, bin: "", clusters: [{ name: "rome" }] }),
    );
    const r = await sh([
      process.execPath,
      join(import.meta.dir, "cli.ts"),
      "image",
      "import",
      images[0]!.archive,
      "--dir",
      dir,
    ]);
    expect(r.err).toContain("has no real nodes");
    expect(r.code).not.toBe(0);
  });
});

describe(rigImageRefs.hello, () => {
  test("curl runs", async () => {
    const r = await runImage(rigImageRefs.hello, ["curl", "--version"]);
    expect(r.out).toMatch(/^curl \d+\.\d+/);
    expect(r.code).toBe(0);
  });

  test("nginx accepts its configuration", async () => {
    const r = await runImage(rigImageRefs.hello, ["sh", "-c", "nginx -t"]);
    expect(r.err).toContain("syntax is ok");
    expect(r.code).toBe(0);
  });

  test("the tools data-plane tests run in pods are on PATH", async () => {
    const tools = ["ip", "ping", "nc", "dig", "nslookup", "iperf3", "ps", "curl", "sysctl"];
    const r = await runImage(rigImageRefs.hello, [
      "sh",
      "-c",
      `for t in ${tools.join(" ")}; do command -v $t >/dev/null || echo "missing $t"; done`,
    ]);
    expect(r.out).toBe("");
    expect(r.code).toBe(0);
  });

  test("by default nginx answers every path with the pod's name and logs the request to stdout", async () => {
    const name = id("web");
    const log = join(tmp, `${name}.log`);
    await ok(await ctr("run", "-d", "--runc-root", runcRoot, "--log-uri", `file://${log}`, rigImageRefs.hello, name));
    try {
      const page = await waitFor(
        "nginx to answer",
        async () => {
          const r = await ctr(
            "tasks",
            "exec",
            "--exec-id",
            id("curl"),
            name,
            "sh",
            "-c",
            "curl -sS http://127.0.0.1/some/path?x=1 && cat /proc/sys/kernel/hostname",
          );
          return r.code === 0 ? r.out : undefined;
        },
        { timeoutMs: 20_000 },
      );
      const lines = page.trim().split("\n");
      const hostname = lines.pop()!;
      expect(lines[0]).toBe("Server address: 127.0.0.1:80");
      expect(lines[1]).toBe(`Server name: ${hostname}`);
      expect(lines[2]).toMatch(/^Date: \d{2}\/\w{3}\/\d{4}:/);
      expect(lines[3]).toBe("URI: /some/path?x=1");
      const logged = await waitFor(
        "the access line in the container's log",
        () => {
          const text = existsSync(log) ? readFileSync(log, "utf8") : "";
          return text.includes("GET /some/path?x=1") ? text : undefined;
        },
        { timeoutMs: 10_000 },
      );
      expect(logged).toContain('"GET /some/path?x=1 HTTP/1.1" 200');
    } finally {
      await ctr("tasks", "kill", "-s", "SIGKILL", name);
      await waitFor("the web task to stop", async () => (await ctr("tasks", "delete", name)).code === 0, {
        timeoutMs: 10_000,
      });
      await ctr("containers", "delete", name);
    }
  });
});

describe(rigImageRefs.pause, () => {
  /** Starts pause in the foreground; resolves once its process runs, with the ctr run process. */
  async function startPause() {
    const name = id("pause");
    const pidFile = join(tmp, `${name}.pid`);
    const run = Bun.spawn(
      [
        ctrPath(),
        "--address",
        socket,
        "-n",
        "k8s.io",
        "run",
        "--rm",
        "--runc-root",
        runcRoot,
        "--pid-file",
        pidFile,
        rigImageRefs.pause,
        name,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const pid = await waitFor(
      "pause to start",
      () =>
        (existsSync(pidFile) && Number(readFileSync(pidFile, "utf8"))) ||
        (run.exitCode !== null ? Promise.reject(new Error(`ctr run exited ${run.exitCode}`)) : undefined),
      { timeoutMs: 20_000 },
    );
    return { name, pid, run };
  }

  for (const signal of ["SIGTERM", "SIGINT"]) {
    test(`sleeps until ${signal}, then exits 0`, async () => {
      const p = await startPause();
      const early = await Promise.race([p.run.exited, Bun.sleep(500).then(() => "running")]);
      expect(early).toBe("running");
      await ok(await ctr("tasks", "kill", "-s", signal, p.name));
      const [code, err] = await Promise.all([p.run.exited, new Response(p.run.stderr).text()]);
      expect(err).toBe("");
      expect(code).toBe(0);
    });
  }

  test("reaps the orphans it inherits as PID 1", async () => {
    const p = await startPause();
    try {
      const children = () => readFileSync(`/proc/${p.pid}/task/${p.pid}/children`, "utf8").trim();
      // The shell exits at once; its sleep is orphaned to the namespace's init, pause. (The sleep
      // lets go of our pipes, or reading them to the end would wait for it.)
      await ok(
        await sh([
          "nsenter",
          "-t",
          String(p.pid),
          "-p",
          "--",
          "sh",
          "-c",
          "sleep 2 </dev/null >/dev/null 2>&1 & exit 0",
        ]),
      );
      expect(children()).not.toBe("");
      await waitFor("the orphan to be reaped", () => children() === "", { timeoutMs: 10_000, describe: children });
    } finally {
      await ctr("tasks", "kill", "-s", "SIGTERM", p.name);
      await p.run.exited;
    }
  });
});

describe(rigImageRefs.coredns, () => {
  test("coredns runs", async () => {
    const r = await runImage(rigImageRefs.coredns, ["/coredns", "-version"]);
    expect(r.out).toContain(`CoreDNS-${rigImageRefs.coredns.split(":v")[1]}`);
    expect(r.code).toBe(0);
  });

  // Run with the image's own entrypoint and arguments (ctr's arguments would replace both).
  test("it answers from a mounted Corefile", async () => {
    const port = await freePort();
    const conf = join(tmp, "coredns");
    mkdirSync(conf);
    writeFileSync(join(conf, "Corefile"), `.:${port} {\n  hosts {\n    10.1.2.3 probe.rig.test\n  }\n}\n`);
    const name = id("dns");
    await ok(
      await ctr(
        "run",
        "-d",
        "--net-host",
        "--runc-root",
        runcRoot,
        "--mount",
        `type=bind,src=${conf},dst=/etc/coredns,options=rbind:ro`,
        rigImageRefs.coredns,
        name,
      ),
    );
    try {
      const answer = await waitFor(
        "coredns to answer",
        async () => {
          const r = await runImage(
            rigImageRefs.hello,
            ["dig", "+short", "+time=1", "+tries=1", "-p", String(port), "@127.0.0.1", "probe.rig.test"],
            ["--net-host"],
          );
          return r.code === 0 && r.out.trim() ? r.out.trim() : undefined;
        },
        { timeoutMs: 30_000 },
      );
      expect(answer).toBe("10.1.2.3");
    } finally {
      await ctr("tasks", "kill", "-s", "SIGKILL", name);
      await waitFor("the dns task to stop", async () => (await ctr("tasks", "delete", name)).code === 0, {
        timeoutMs: 10_000,
      });
      await ctr("containers", "delete", name);
    }
  });
});

describe(rigImageRefs.liqo, () => {
  test("the liqo CLI runs as uid 1000 from /liqo", async () => {
    const r = await runImage(rigImageRefs.liqo, ["sh", "-c", "id -u; pwd; exec bun cli/liqo.ts --help"]);
    const [uid, cwd] = r.out.split("\n");
    expect({ uid, cwd }).toEqual({ uid: "1000", cwd: "/liqo" });
    expect(r.out).toContain("gateway");
    expect(r.code).toBe(0);
  });

  test("the gateway's tools are in it: wireguard-go, sysctl, ping, wg, nft, ip", async () => {
    const dir = join(tmp, "liqo-mount");
    mkdirSync(dir);
    await ok(await ctr("images", "mount", rigImageRefs.liqo, dir));
    try {
      const versions = [
        ["wireguard-go", "--version"],
        ["sysctl", "--version"],
        ["ping", "-V"],
        ["wg", "--version"],
        ["nft", "--version"],
        ["ip", "-V"],
      ];
      for (const [tool, flag] of versions) {
        const r = await sh(["chroot", dir, "sh", "-c", `exec ${tool} ${flag}`]);
        expect({ tool, code: r.code }).toEqual({ tool: tool!, code: 0 });
      }
    } finally {
      await ctr("images", "unmount", "--rm", dir);
    }
  });
});
