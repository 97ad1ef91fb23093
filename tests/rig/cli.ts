// `bun run rig up|down|status|kubeconfig|build`: real clusters on loopback for development and tests.
import { defineCommand } from "citty";
import { runCli } from "../../cli/run.ts";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { ensureRigBinaries } from "./binaries.ts";
import { RigError } from "./errors.ts";
import {
  archiveRefs,
  ensureImages,
  ensureRigImages,
  extraImageRefs,
  type ImageName,
  importImages,
  normalizeRef,
  rigImageRefs,
} from "./images.ts";
import { archiveImageNames, mirrorRepository, openOciArchive, pushArchive } from "./oci-push.ts";
import { registryUrl, writeMirrorHosts } from "./registry.ts";
import { defaultRigDir, loadRig, rigDown, rigProcesses, rigUp } from "./rig.ts";

const dirArg = {
  dir: { type: "string", description: "rig state directory (default: $LIQO_RIG_DIR or <tmp>/liqo-rig)" },
} as const;
const stamp = () => new Date().toISOString().slice(11, 19);

const up = defineCommand({
  meta: { name: "up", description: "Start N clusters (etcd, API server, controller manager, scheduler, kwok nodes)" },
  args: {
    clusters: { type: "string", default: "2", description: "how many clusters" },
    names: { type: "string", description: "comma-separated cluster names (default rome,milan,naples,…)" },
    "overlapping-pod-cidrs": { type: "boolean", description: `give every cluster the same pod CIDR (10.200.0.0/16)` },
    nodes: { type: "string", description: "kwok (fake) worker nodes per cluster (default 2; 0 with --real-nodes)" },
    "real-nodes": {
      type: "string",
      default: "0",
      description:
        "real worker nodes per cluster: containerd, kubelet, kube-proxy, CNI and DNS in a network namespace each",
    },
    foreign: {
      type: "boolean",
      description:
        "clusters that behave like someone else's: Pod Security baseline enforced, nodes' interface ens5, every image pulled from the registry, a kubeconfig naming the API server's bridge address",
    },
    "base-port": {
      type: "string",
      description: "use ports from this one upwards (6 per cluster) instead of free ones",
    },
    ...dirArg,
  },
  async run({ args }) {
    const started = performance.now();
    const rig = await rigUp({
      clusters: Number(args.clusters),
      names: args.names ? args.names.split(",").map((s) => s.trim()) : undefined,
      overlappingPodCidrs: args["overlapping-pod-cidrs"],
      nodes: args.nodes === undefined ? undefined : Number(args.nodes),
      realNodes: Number(args["real-nodes"]),
      foreign: args.foreign,
      basePort: args["base-port"] ? Number(args["base-port"]) : undefined,
      dir: args.dir,
      progress: (m) => console.error(`${stamp()} INFO  ${m}`),
    });
    console.log(
      `\nRig up in ${((performance.now() - started) / 1000).toFixed(1)}s; kubeconfigs in ${rig.kubeconfigDir}\n`,
    );
    for (const c of rig.clusters) {
      console.log(
        `  ${c.name.padEnd(10)} pods ${c.podCIDR.padEnd(15)} services ${c.serviceCIDR.padEnd(15)} ${c.server}`,
      );
      console.log(`             kubectl --kubeconfig ${join(rig.kubeconfigDir, `${c.name}.kubeconfig`)} get nodes`);
    }
    console.log(`\nStop everything with: bun run rig down${args.dir ? ` --dir ${args.dir}` : ""}`);
  },
});

const down = defineCommand({
  meta: { name: "down", description: "Stop every component and remove the rig's directory" },
  args: { ...dirArg },
  async run({ args }) {
    const dir = args.dir ?? defaultRigDir();
    const stopped = await rigDown(dir);
    console.log(stopped.length ? `Stopped ${stopped.join(", ")}; removed ${dir}` : `No rig in ${dir}; nothing to stop`);
  },
});

const status = defineCommand({
  meta: { name: "status", description: "Show the rig's clusters and whether each component runs" },
  args: { ...dirArg },
  run({ args }) {
    const dir = args.dir ?? defaultRigDir();
    const rig = loadRig(dir);
    if (!rig) {
      console.log(`No rig in ${dir}. Start one with: bun run rig up --clusters 2`);
      return;
    }
    const procs = rigProcesses(rig);
    for (const c of rig.clusters) {
      const real = c.realNodeStates?.length
        ? `  real nodes ${c.realNodeStates.map((n) => `${n.name} (${n.ip})`).join(", ")}`
        : "";
      console.log(`${c.name}  ${c.server}  pods ${c.podCIDR}  services ${c.serviceCIDR}  kwok nodes ${c.nodes}${real}`);
      for (const p of procs.filter((x) => x.cluster === c.name)) {
        console.log(
          `  ${p.component.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${p.alive ? "running" : "NOT RUNNING"}`,
        );
      }
    }
    if (rig.registry) {
      const p = procs.find((x) => x.component === "registry");
      console.log(
        `registry  ${registryUrl(rig.registry)}  pid ${p?.pid ?? "-"} ${p?.alive ? "running" : "NOT RUNNING"}  storage ${rig.registry.storage}`,
      );
    }
    const extras = procs.filter((x) => x.cluster === "-" && x.component !== "registry");
    if (extras.length) console.log("liqo processes");
    for (const p of extras)
      console.log(`  ${p.component.padEnd(40)} pid ${String(p.pid).padEnd(8)} ${p.alive ? "running" : "NOT RUNNING"}`);
    if (procs.some((p) => !p.alive)) process.exitCode = 1;
  },
});

const kubeconfig = defineCommand({
  meta: { name: "kubeconfig", description: "Print the path of a cluster's kubeconfig" },
  args: { name: { type: "positional", required: true, description: "cluster name" }, ...dirArg },
  run({ args }) {
    const rig = loadRig(args.dir ?? defaultRigDir());
    const path = rig && join(rig.kubeconfigDir, `${args.name}.kubeconfig`);
    if (!path || !existsSync(path)) {
      const names = rig?.clusters.map((c) => c.name).join(", ") || "none (no rig running)";
      throw new RigError(`no cluster named "${args.name}" in the rig; clusters: ${names}`);
    }
    console.log(path);
  },
});

const build = defineCommand({
  meta: { name: "build", description: "Build the rig's binaries into the cache (done by `up` when needed)" },
  async run() {
    console.log(await ensureRigBinaries());
  },
});

const imageImport = defineCommand({
  meta: {
    name: "import",
    description: "Import an image archive (OCI or docker save) into the containerd of every real node",
  },
  args: {
    archive: { type: "positional", required: true, description: "the archive, e.g. my-image.oci.tar" },
    ...dirArg,
  },
  async run({ args }) {
    const dir = args.dir ?? defaultRigDir();
    const rig = loadRig(dir);
    if (!rig) throw new RigError(`no rig in ${dir}; start one with: bun run rig up --real-nodes 1`);
    const nodes = rig.clusters.flatMap((c) => c.realNodeStates ?? []);
    if (!nodes.length)
      throw new RigError(`the rig in ${dir} has no real nodes (its pods run on kwok); start it with --real-nodes N`);
    const archive = resolve(args.archive);
    const refs = await archiveRefs(archive);
    await Promise.all(
      nodes.map(async (n) => {
        await importImages(n.containerdSocket, [archive]);
        console.log(`${n.name.padEnd(20)} ${refs.join(", ")}`);
      }),
    );
    console.log(
      `\nImported into ${nodes.length} node(s); pods use it with imagePullPolicy: IfNotPresent (or Never); \`rig image push\` serves it to any pull policy`,
    );
  },
});

const imagePush = defineCommand({
  meta: {
    name: "push",
    description:
      "Push an OCI image archive into the rig's registry, the mirror of every real node: pods pull it with any pull policy",
  },
  args: {
    archive: { type: "positional", required: true, description: "the archive, e.g. my-image.oci.tar" },
    as: { type: "string", description: "push under this name instead of the archive's (e.g. docker.io/me/app:1)" },
    ...dirArg,
  },
  async run({ args }) {
    const dir = args.dir ?? defaultRigDir();
    const rig = loadRig(dir);
    if (!rig) throw new RigError(`no rig in ${dir}; start one with: bun run rig up --real-nodes 1`);
    if (!rig.registry)
      throw new RigError(`the rig in ${dir} has no registry (it runs with real nodes); start it with --real-nodes N`);
    const archive = resolve(args.archive);
    const names = args.as ? [normalizeRef(args.as)] : archiveImageNames(await openOciArchive(archive));
    // A registry host the rig does not mirror yet gets its hosts.toml now; containerd reads it at the next pull.
    writeMirrorHosts(
      rig.registry,
      names.map((n) => mirrorRepository(n).host),
    );
    const started = performance.now();
    const report = await pushArchive({ archive, registry: registryUrl(rig.registry), names });
    for (const n of names) console.log(`${n.padEnd(50)} ${report.digest}`);
    console.log(
      `\nPushed to ${registryUrl(rig.registry)} in ${((performance.now() - started) / 1000).toFixed(1)}s ` +
        `(blobs: ${report.uploaded.length} uploaded, ${report.mounted.length} mounted, ${report.present.length} there already)`,
    );
  },
});

const imageBuild = defineCommand({
  meta: {
    name: "build",
    description:
      "Build the images real nodes run (pause, hello, coredns, liqo; done by `up` when needed), or one named image (e.g. postgres, for the stateful tutorial), into the cache",
  },
  args: {
    name: {
      type: "positional",
      required: false,
      description: `one image: ${Object.keys({ ...rigImageRefs, ...extraImageRefs }).join(", ")}`,
    },
  },
  async run({ args }) {
    const known = Object.keys({ ...rigImageRefs, ...extraImageRefs });
    if (args.name && !known.includes(args.name))
      throw new RigError(`no image named ${args.name}: choose one of ${known.join(", ")}`);
    const say = (m: string) => console.error(`${stamp()} INFO  ${m}`);
    const built = args.name ? await ensureImages([args.name as ImageName], say) : await ensureRigImages(say);
    for (const i of built) console.log(`${i.ref.padEnd(40)} ${i.archive}`);
  },
});

const image = defineCommand({
  meta: { name: "image", description: "Images on the real nodes: build the rig's own, push or import yours" },
  subCommands: { import: imageImport, push: imagePush, build: imageBuild },
});

const main = defineCommand({
  meta: { name: "rig", description: "Real Kubernetes clusters on loopback, without a container engine" },
  subCommands: { up, down, status, kubeconfig, build, image },
});

process.exit(await runCli(main, process.argv.slice(2)));
