// liqoctl move volume <claim> --namespace <ns> --node <target>: moves the data of a claim of the
// virtual storage class to another node, here or in a peer (cli/storage-move.ts says how).
import { defineCommand } from "citty";
import { ForeignClusterResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { keyOf, Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import type { Claim, Volume } from "../../core/storage/forge.ts";
import { CliError, ExitCode } from "../errors.ts";
import {
  fabricRefusal,
  lastProgress,
  moveRefusal,
  peersCrossed,
  podsUsing,
  receiverPod,
  recreatedClaim,
  sourcePod,
  sourceService,
  temporaryClaim,
  verifiedDigest,
} from "../storage-move.ts";
import { preflight } from "../test-network/preflight.ts";
import { info, parseDuration, spinner } from "../ui.ts";

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

async function waitGone(client: KubeClient, res: typeof Resources.pods, name: string, ns: string, deadline: number) {
  while (await client.find(res, name, ns)) {
    if (Date.now() > deadline)
      throw new CliError(`${res.kind} ${ns}/${name} is still being deleted; check its finalizers`);
    await Bun.sleep(500);
  }
}

/** One copy, claim → claim, the receiver on `node`; resolves with the receiver's last line or throws with its log. */
async function copy(
  client: KubeClient,
  o: {
    ns: string;
    from: string;
    to: string;
    node: string;
    image: string;
    tag: string;
    deadline: number;
    what: string;
    /** The digest the first copy verified: the second refuses a source that holds other files. */
    expect?: string;
  },
) {
  const src = `liqo-move-src-${o.tag}`;
  const dst = `liqo-move-dst-${o.tag}`;
  await client.create(Resources.services, sourceService(src, o.ns, src));
  await client.create(Resources.pods, sourcePod(src, o.ns, o.image, o.from));
  await client.create(Resources.pods, receiverPod(dst, o.ns, o.image, o.to, o.node, src, o.expect));
  const spin = spinner(`${o.what}: starting the copy pods`);
  try {
    while (true) {
      const pod = await client.find<Pod>(Resources.pods, dst, o.ns);
      const phase = pod?.status?.phase;
      const log =
        phase && phase !== "Pending"
          ? await client.text(`/api/v1/namespaces/${o.ns}/pods/${dst}/log`).catch(() => "")
          : "";
      const p = lastProgress(log);
      if (p) spin.update(`${o.what}: ${mib(p.copied)} of ${mib(p.total)}`);
      if (phase === "Succeeded") {
        const line = log.trim().split("\n").at(-1) ?? "";
        spin.succeed(`${o.what}: ${line}`);
        return line;
      }
      if (phase === "Failed") {
        spin.fail(`${o.what} failed`);
        throw new CliError(
          `${o.what} failed: ${log.trim().split("\n").slice(-3).join("; ") || "the receiver pod failed"}`,
          ExitCode.Failure,
        );
      }
      if (Date.now() > o.deadline) {
        spin.fail(`${o.what} timed out`);
        throw new CliError(
          `${o.what} did not finish in time (receiver pod ${o.ns}/${dst}: ${phase ?? "missing"})`,
          ExitCode.Failure,
        );
      }
      await Bun.sleep(1000);
    }
  } finally {
    for (const [res, name] of [
      [Resources.pods, dst],
      [Resources.pods, src],
      [Resources.services, src],
    ] as const) {
      await client
        .delete(res, name, o.ns, { gracePeriodSeconds: res === Resources.pods ? 0 : undefined })
        .catch(() => false);
    }
    for (const name of [dst, src]) await waitGone(client, Resources.pods, name, o.ns, Date.now() + 120_000);
  }
}

async function liqoImage(client: KubeClient, liqoNamespace: string): Promise<string> {
  const d = await client.find<KubeObject & { spec?: { template?: { spec?: { containers?: { image?: string }[] } } } }>(
    Resources.deployments,
    "liqo-controller-manager",
    liqoNamespace,
  );
  const image = d?.spec?.template?.spec?.containers?.[0]?.image;
  if (!image)
    throw new CliError(
      `cannot find liqo's image: no Deployment liqo-controller-manager in namespace ${liqoNamespace} (--liqo-namespace?)`,
    );
  return image;
}

/** Refuses before anything changes when a peering the copy crosses has no working network fabric. */
async function checkFabric(client: KubeClient, key: string, clusterIds: string[], liqoNamespace: string) {
  if (!clusterIds.length) return;
  const fcs = (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
  for (const id of clusterIds) {
    const fc = fcs.find((f) => f.spec.clusterIdentity?.clusterID === id);
    if (!fc)
      throw new CliError(`the copy of ${key} needs the peering with cluster ${id}, and there is none (liqoctl status)`);
    const name = fc.spec.clusterIdentity?.clusterName ?? fc.metadata.name!;
    if (fc.spec.networkingEnabled === "No")
      throw new CliError(
        `the copy of ${key} crosses the network fabric to ${name}, and that peering has networking disabled (peered with --no-networking); nothing was changed`,
      );
    const refusal = fabricRefusal(key, name, (await preflight(client, fc, liqoNamespace)).rows);
    if (refusal) throw new CliError(refusal);
  }
}

const moveVolume = defineCommand({
  meta: {
    name: "volume",
    alias: "pvc",
    description:
      "Move the data of a claim of the virtual storage class to another node, here or in a peer (no pod may use it meanwhile)",
  },
  args: {
    name: { type: "positional", required: true, description: "the PersistentVolumeClaim" },
    namespace: { type: "string", alias: "n", required: true, description: "its namespace" },
    node: {
      type: "string",
      alias: "target-node",
      required: true,
      description: "the target node (physical, or the virtual node of a peer)",
    },
    "virtual-storage-class": { type: "string", default: "liqo", description: "the virtual storage class" },
    "liqo-namespace": {
      type: "string",
      default: "liqo",
      description: "where liqo is installed (its image runs the copy)",
    },
    timeout: { type: "string", default: "30m", description: "how long the whole move may take" },
    kubeconfig: { type: "string", description: "path to the kubeconfig" },
    context: { type: "string", description: "kubeconfig context to use" },
  },
  async run({ args }) {
    let timeoutMs: number;
    try {
      timeoutMs = parseDuration(args.timeout, "timeout");
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const deadline = Date.now() + timeoutMs;
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const ns = args.namespace;
    const key = keyOf(ns, args.name);
    const claim = await client.find<Claim>(Resources.persistentVolumeClaims, args.name, ns);
    const volume = claim?.spec?.volumeName
      ? await client.find<Volume>(Resources.persistentVolumes, claim.spec.volumeName)
      : undefined;
    const target = await client.find(Resources.nodes, args.node);
    const pods = (await client.list<Pod>(Resources.pods, { namespace: ns })).items;
    const refusal = moveRefusal({
      key,
      claim,
      volume,
      virtualClass: args["virtual-storage-class"],
      target,
      targetName: args.node,
      users: podsUsing(pods, args.name),
    });
    if (refusal) throw new CliError(refusal);
    await checkFabric(client, key, peersCrossed(volume!, target!), args["liqo-namespace"]);
    const image = await liqoImage(client, args["liqo-namespace"]);
    const tag = claim!.metadata.uid!.slice(0, 8);
    const temp = `${args.name}-liqo-move`.slice(0, 253);

    info(
      `moving ${key} to node ${args.node}: first into a temporary claim ${ns}/${temp} there; the original stays until that copy is verified`,
    );
    try {
      await client.create(Resources.persistentVolumeClaims, temporaryClaim(claim!, temp));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409)
        throw new CliError(
          `claim ${ns}/${temp} exists: a previous move was interrupted; check its data, delete it, then retry`,
        );
      throw err;
    }
    let digest: string | undefined;
    try {
      digest = verifiedDigest(
        await copy(client, {
          ns,
          from: args.name,
          to: temp,
          node: args.node,
          image,
          tag: `${tag}-a`,
          deadline,
          what: `copy of ${key} to ${args.node}`,
        }),
      );
    } catch (err) {
      await client.delete(Resources.persistentVolumeClaims, temp, ns).catch(() => false);
      info(`${key} is untouched; the temporary claim is deleted`);
      throw err;
    }

    info(`the copy is verified; deleting the original volume of ${key} and making the claim again on ${args.node}`);
    await client.delete(Resources.persistentVolumeClaims, args.name, ns, { uid: claim!.metadata.uid });
    await waitGone(client, Resources.persistentVolumeClaims, args.name, ns, deadline);
    await client.create(Resources.persistentVolumeClaims, recreatedClaim(claim!));
    try {
      await copy(client, {
        ns,
        from: temp,
        to: args.name,
        node: args.node,
        image,
        tag: `${tag}-b`,
        deadline,
        what: `filling ${key} on ${args.node}`,
        expect: digest,
      });
    } catch (err) {
      info(
        `the data is safe in claim ${ns}/${temp} on ${args.node}; fix the cause and copy it into ${key}, or keep using it`,
      );
      throw err;
    }
    await client.delete(Resources.persistentVolumeClaims, temp, ns);
    info(`moved ${key} to node ${args.node}; its pods will now run there`);
  },
});

export default defineCommand({
  meta: { name: "move", description: "Move resources between clusters" },
  subCommands: { volume: moveVolume },
});
