// liqoctl move volume: the pieces as pure functions (checks, names, the pods that copy). The data
// goes pod to pod through the cluster network, and the network fabric when a peer is involved: a
// source pod on the volume serves `tar` of it over HTTP behind a Service (which liqo reflects to
// the peer, endpoints translated), and a receiver pod on the target node unpacks it and compares
// SHA-256 sums of every file with the source's. Both run the liqo image (every liqo cluster has
// it) with Bun: no restic image or repository to provide, and nothing stored outside the two
// volumes. The copy goes to a temporary claim first; the original is deleted only once that copy
// is verified; the claim is then created again on the target and filled from the temporary one.
import {
  REMOTE_CLUSTER_ID_LABEL,
  STORAGE_AVAILABLE_LABEL,
  TYPE_LABEL,
  VIRTUAL_NODE_TYPE,
} from "../core/apis/labels.ts";
import type { KubeObject } from "../core/kube/resources.ts";
import type { Node, Pod } from "../core/kube/types.ts";
import { backingOf, type Claim, type Volume } from "../core/storage/forge.ts";

/** Pods that still use the claim (anything not finished). */
export function podsUsing(pods: Pod[], claim: string): string[] {
  return pods
    .filter((p) => p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed")
    .filter((p) => p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim))
    .map((p) => p.metadata.name!)
    .sort();
}

/** Where a virtual PV keeps the data: a physical node, or a peer's cluster ID. */
export function volumeLocation(pv: Volume): { node?: string; clusterId?: string } | undefined {
  const b = backingOf(pv);
  if (b?.where === "remote") return { clusterId: b.clusterId };
  if (b?.where !== "local") return undefined;
  const terms = (
    pv.spec?.nodeAffinity as {
      required?: { nodeSelectorTerms?: { matchExpressions?: { key: string; values?: string[] }[] }[] };
    }
  )?.required?.nodeSelectorTerms;
  const host = terms?.flatMap((t) => t.matchExpressions ?? []).find((e) => e.key === "kubernetes.io/hostname");
  return { node: host?.values?.[0] };
}

/** Why the move cannot start, or undefined. */
export function moveRefusal(o: {
  key: string;
  claim?: Claim;
  volume?: Volume;
  virtualClass: string;
  target?: Node;
  targetName: string;
  users: string[];
}): string | undefined {
  if (!o.claim) return `claim ${o.key} not found`;
  if (o.claim.spec?.storageClassName !== o.virtualClass) {
    return `claim ${o.key} is of class ${o.claim.spec?.storageClassName ?? "(default)"}; only claims of the virtual class ${o.virtualClass} can be moved`;
  }
  if (!o.claim.spec?.volumeName || !o.volume)
    return `claim ${o.key} is not bound yet: nothing to move (its first pod decides where it is made)`;
  const where = volumeLocation(o.volume);
  if (!where) return `claim ${o.key} is bound to ${o.volume.metadata.name}, which the liqo provisioner did not make`;
  if (!o.target) return `node ${o.targetName} does not exist: choose one of kubectl get nodes`;
  const labels = o.target.metadata.labels ?? {};
  const virtual = labels[TYPE_LABEL] === VIRTUAL_NODE_TYPE;
  if (virtual && labels[STORAGE_AVAILABLE_LABEL] !== "true")
    return `virtual node ${o.targetName} offers no storage (its cluster negotiated no storage class)`;
  if (o.users.length) {
    return `claim ${o.key} is used by pod(s) ${o.users.join(", ")}: stop them first (e.g. scale the StatefulSet to 0); a volume in use cannot be moved`;
  }
  if (virtual ? where.clusterId === labels[REMOTE_CLUSTER_ID_LABEL] : where.node === o.targetName) {
    return `claim ${o.key} is already on ${o.targetName}`;
  }
  return undefined;
}

/** The peers (cluster IDs) whose network fabric the copy crosses: where the data is, and the target's. */
export function peersCrossed(volume: Volume, target: Node): string[] {
  const labels = target.metadata.labels ?? {};
  const ids = [
    volumeLocation(volume)?.clusterId,
    labels[TYPE_LABEL] === VIRTUAL_NODE_TYPE ? labels[REMOTE_CLUSTER_ID_LABEL] : undefined,
  ];
  return [...new Set(ids.filter((id): id is string => !!id))];
}

/** Why the fabric to `peer` cannot carry the copy (the checks of `liqoctl test network` that failed), or undefined. */
export function fabricRefusal(
  key: string,
  peer: string,
  rows: { check: string; ok: boolean; detail: string }[],
): string | undefined {
  const failed = rows.filter((r) => !r.ok);
  if (!failed.length) return undefined;
  return `the copy of ${key} crosses the network fabric to ${peer}, which is down: ${failed.map((r) => `${r.check}: ${r.detail}`).join("; ")}. Nothing was changed; repair the fabric (liqoctl test network ${peer} shows what works), then retry`;
}

/** The temporary claim: same size, modes and class. */
export function temporaryClaim(claim: Claim, name: string): Claim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: claim.metadata.namespace, labels: { "liqo.io/move-of": claim.metadata.name! } },
    spec: {
      storageClassName: claim.spec?.storageClassName,
      accessModes: claim.spec?.accessModes,
      volumeMode: claim.spec?.volumeMode,
      resources: { requests: { storage: claim.spec?.resources?.requests?.storage } },
    },
  };
}

/** The claim made again: its labels and annotations, without the binding of the old volume. */
export function recreatedClaim(claim: Claim): Claim {
  const annotations = Object.fromEntries(
    Object.entries(claim.metadata.annotations ?? {}).filter(
      ([k]) =>
        !k.startsWith("pv.kubernetes.io/") &&
        !k.startsWith("volume.") &&
        k !== "kubectl.kubernetes.io/last-applied-configuration",
    ),
  );
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claim.metadata.name,
      namespace: claim.metadata.namespace,
      labels: claim.metadata.labels,
      annotations,
    },
    spec: temporaryClaim(claim, claim.metadata.name!).spec,
  };
}

// DATA and PORT are for the unit tests, which run both scripts on the test machine.
const SUMS = 'cd "$DATA" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum';

/** Serves /tar (the volume), /sums (SHA-256 of every file), /size (bytes) on 8080. */
export const sourceScript = `
const dir = process.env.DATA || "/data";
const sh = async (c) => { const p = Bun.spawn(["sh", "-c", c], { env: { ...process.env, DATA: dir } }); return await new Response(p.stdout).text(); };
Bun.serve({ port: Number(process.env.PORT || 8080), idleTimeout: 0, async fetch(req) {
  const path = new URL(req.url).pathname;
  if (path === "/sums") return new Response(await sh(${JSON.stringify(SUMS)}));
  if (path === "/size") return new Response((await sh("du -sb " + dir)).split("\\t")[0]);
  if (path === "/tar") return new Response(Bun.spawn(["tar", "-C", dir, "-cf", "-", "."]).stdout);
  return new Response("ok");
} });
console.log("serving " + dir);
`;

/**
 * Fetches the source's tar into /data, prints progress, then compares sums: exit 0 only when
 * equal, and, given EXPECT (the digest the first copy printed), only when the source still holds
 * the files that copy verified. The last line names the digest of the list of sums.
 */
export const receiverScript = `
const base = process.env.SOURCE;
const dir = process.env.DATA || "/data";
const sh = async (c) => { const p = Bun.spawn(["sh", "-c", c], { env: { ...process.env, DATA: dir } }); return await new Response(p.stdout).text(); };
let size;
for (let i = 0; ; i++) {
  // Bounded: a connection to a Service whose rules are not there yet can hang for minutes.
  try { size = Number(await (await fetch(base + "/size", { signal: AbortSignal.timeout(3000) })).text()); break; }
  catch (err) { if (i > 300) { console.log("error: the source never answered: " + err.message); process.exit(4); } await Bun.sleep(1000); }
}
const res = await fetch(base + "/tar");
const tar = Bun.spawn(["tar", "-C", dir, "-xf", "-"], { stdin: "pipe" });
let n = 0, last = 0;
for await (const chunk of res.body) {
  tar.stdin.write(chunk); n += chunk.length;
  if (Date.now() - last > 1000) { console.log("progress " + n + " " + size); last = Date.now(); }
}
tar.stdin.end();
if (await tar.exited) { console.log("error: tar could not unpack the copy"); process.exit(2); }
console.log("progress " + n + " " + size);
const want = await (await fetch(base + "/sums")).text();
const got = await sh(${JSON.stringify(SUMS)});
if (want !== got) { console.log("error: checksums differ"); process.exit(3); }
const digest = new Bun.CryptoHasher("sha256").update(got).digest("hex");
if (process.env.EXPECT && process.env.EXPECT !== digest) {
  console.log("error: the source does not hold the files the first copy verified (digest " + digest + ", expected " + process.env.EXPECT + ")");
  process.exit(5);
}
console.log("verified " + got.split("\\n").filter(Boolean).length + " files, digest " + digest);
`;

const virtualToleration = { key: "virtual-node.liqo.io/not-allowed", operator: "Exists" };

function copyPod(
  name: string,
  ns: string,
  image: string,
  claim: string,
  script: string,
  extra: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels: { "liqo.io/move": name } },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      tolerations: [virtualToleration],
      // Root: the volume's files may belong to any user.
      securityContext: { runAsUser: 0 },
      containers: [
        {
          name: "copy",
          image,
          imagePullPolicy: "IfNotPresent",
          command: ["bun", "-e", script],
          volumeMounts: [{ name: "data", mountPath: "/data" }],
          ...extra,
        },
      ],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: claim } }],
    },
  } as KubeObject;
}

/** The source pod: the scheduler follows the volume's node affinity. */
export function sourcePod(name: string, ns: string, image: string, claim: string): KubeObject {
  return copyPod(name, ns, image, claim, sourceScript, { ports: [{ containerPort: 8080 }] });
}

/** The receiver, on the target node (by affinity, so the scheduler places the new volume there). */
export function receiverPod(
  name: string,
  ns: string,
  image: string,
  claim: string,
  node: string,
  service: string,
  expect?: string,
): KubeObject {
  const pod = copyPod(name, ns, image, claim, receiverScript, {
    env: [{ name: "SOURCE", value: `http://${service}:8080` }, ...(expect ? [{ name: "EXPECT", value: expect }] : [])],
  });
  (pod.spec as Record<string, unknown>).affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [node] }] }],
      },
    },
  };
  return pod;
}

export function sourceService(name: string, ns: string, pod: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns },
    spec: { selector: { "liqo.io/move": pod }, ports: [{ port: 8080, targetPort: 8080 }] },
  } as KubeObject;
}

/** The digest a receiver's last line names (of the list of sums it verified). */
export function verifiedDigest(line: string): string | undefined {
  return /^verified \d+ files, digest ([0-9a-f]{64})$/.exec(line)?.[1];
}

/** The last progress line of a receiver's log: bytes copied of the total. */
export function lastProgress(log: string): { copied: number; total: number } | undefined {
  const m = [...log.matchAll(/^progress (\d+) (\d+)$/gm)].at(-1);
  return m ? { copied: Number(m[1]), total: Number(m[2]) } : undefined;
}
