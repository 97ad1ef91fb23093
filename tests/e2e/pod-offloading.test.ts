// Pod offloading on a real rig: rome (consumer) runs pods bound to the virtual node liqo-milan in
// milan (provider) through ShadowPods; status comes back with IPs translated and re-creations
// counted; the provider keeps pods alive without the consumer; deletions honour grace periods.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { installCrds, ShadowPodResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createReflectionEngine, type ReflectionEngine } from "../../core/reflection/engine/engine.ts";
import {
  podFor,
  podSecurityLabelFor,
  POD_SECURITY_ENFORCE_LABEL,
  type ShadowPodController,
} from "../../core/shadowpod/controller.ts";
import { ORIGIN_CLAIM_UID_ANNOTATION, RECREATIONS_ANNOTATION } from "../../core/apis/labels.ts";
import { createPodOffloader, OFFLOADING_BACKOFF, type PodOffloader } from "../../core/virtualkubelet/pods/offloader.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { guardKwokDeletes, virtualNodeStandIn } from "./offloading-rig.ts";
import { inCidr } from "../support/cidr.ts";
import { waitFor } from "../support/wait.ts";
import { namespace } from "../support/namespace.ts";
import type { Event } from "../../core/kube/types.ts";

let rig: TestRig;
let rome: KubeClient;
let milan: KubeClient;
let provider: ShadowPodController;
let offloader: PodOffloader;
let engine: ReflectionEngine;
const ids = { localClusterId: "rome-cluster-id", remoteClusterId: "milan-cluster-id" };
const nodeName = "liqo-milan";
const vkIp = "127.0.0.42";
const twins = new Map([["demo", "demo-rome"]]);
// milan's pods (10.101.0.0/16) are seen from rome through a remapped 10.201.0.0/16. Like the
// fabric's translation watcher, the translation can be pending (an address then passes through
// unchanged) and can change (the offloader is then told to look at every pod again).
const translation = { remapTo: "10.201.", pending: undefined as string | undefined, asked: 0 };
const translateIp = (ip: string) => (translation.pending ? ip : ip.replace(/^10\.101\./, translation.remapTo));
const translationPending = () => {
  translation.asked++;
  return translation.pending;
};
// kwok runs no container: the address only has to reach the remote pod's environment.
const originApiServer = "https://203.0.113.10:6443";

// biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, Secrets, TokenReviews), asserted on a few fields
type Pod = KubeObject & { spec: Record<string, any>; status?: Record<string, any> };

const pod = (name: string, namespace: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace, labels: { app: name } },
  spec: {
    nodeName,
    containers: [{ name: "nginx", image: "nginx" }],
    tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
    ...extra,
  },
});

async function startOffloader() {
  offloader = await createPodOffloader({
    local: rome,
    remote: milan,
    ...ids,
    nodeName,
    virtualKubeletIp: vkIp,
    translateIp,
    translationPending,
    remoteNamespaceOf: (ns) => twins.get(ns),
    podsWasm: await builtinWasm("pods"),
    apiServerUrl: originApiServer,
  });
  await offloader.start();
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  rome = rig.client("rome");
  milan = rig.client("milan");
  await installCrds(milan);
  // kwok deletes by name without a UID: without the guard a stale kwok job can kill the re-created pod (see guardKwokDeletes).
  await guardKwokDeletes(milan);
  for (const [c, ns] of [
    [rome, "demo"],
    [rome, "plain"],
    [milan, "demo-rome"],
  ] as const)
    await namespace(c, ns);
  provider = await virtualNodeStandIn(rome, milan, nodeName, ids.remoteClusterId);
  // The secrets reflector runs too: it must leave the pods' token Secrets (no local source) alone.
  engine = createReflectionEngine({ local: rome, remote: milan, ...ids });
  await engine.addPlugin(await builtinWasm("secrets"), { trust: "builtin", source: "builtin:secrets" });
  await engine.addNamespacePair({ localNamespace: "demo", remoteNamespace: "demo-rome" });
  await startOffloader();
}, 600_000);

afterAll(async () => {
  await offloader?.stop();
  await provider?.stop();
  await engine?.stop();
  await rig?.down();
});

describe("pod offloading through ShadowPods", () => {
  test("a pod bound to the virtual node runs in the provider and reports Running with a translated IP", async () => {
    await rome.create(Resources.pods, pod("web", "demo"));
    const shadow = await waitFor("the ShadowPod in milan", () => milan.find(ShadowPodResource, "web", "demo-rome"));
    expect(shadow.metadata.labels?.["liqo.io/origin-cluster-id"]).toBe(ids.localClusterId);
    const remote = await waitFor("the remote pod to run", async () => {
      const p = await milan.find<Pod>(Resources.pods, "web", "demo-rome");
      return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
    });
    // Scheduling constraints are the provider's business: our nodeName is gone, its scheduler chose.
    expect(remote.spec.nodeName).not.toBe(nodeName);
    expect(remote.spec.automountServiceAccountToken).toBe(false);
    const local = await waitFor("the local pod to report Running", async () => {
      const p = await rome.get<Pod>(Resources.pods, "web", "demo");
      return p.status?.phase === "Running" && p.status.podIP ? p : undefined;
    });
    expect(inCidr(remote.status!.podIP, rig.clusters[1]!.podCIDR)).toBe(true);
    expect(local.status!.podIP).toBe(translateIp(remote.status!.podIP));
    expect(inCidr(local.status!.podIP, "10.201.0.0/16")).toBe(true);
    expect(local.status!.hostIP).toBe(vkIp);
  });

  test("the pod's ServiceAccount token of rome, in a Secret owned by its ShadowPod, replaces the projected volume", async () => {
    const remote = await milan.get<Pod>(Resources.pods, "web", "demo-rome");
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, Secrets, TokenReviews), asserted on a few fields
    const tokenVolume = remote.spec.volumes?.find((v: any) => v.secret?.secretName === "web-liqo-api-token");
    expect(tokenVolume?.name).toStartWith("kube-api-access-");
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, Secrets, TokenReviews), asserted on a few fields
    const env = Object.fromEntries(remote.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    expect([env.KUBERNETES_SERVICE_HOST, env.KUBERNETES_SERVICE_PORT]).toEqual(["203.0.113.10", "6443"]);
    const secret = await waitFor("the token Secret in milan", () =>
      // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, Secrets, TokenReviews), asserted on a few fields
      milan.find<any>(Resources.secrets, "web-liqo-api-token", "demo-rome"),
    );
    const shadow = await milan.get(ShadowPodResource, "web", "demo-rome");
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, Secrets, TokenReviews), asserted on a few fields
    expect(secret.metadata.ownerReferences.map((r: any) => r.uid)).toEqual([shadow.metadata.uid]);
    expect(Buffer.from(secret.data.namespace, "base64").toString()).toBe("demo");
    // rome's answer to its own token: the pod's ServiceAccount of rome.
    // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters (pods, Secrets, TokenReviews), asserted on a few fields
    const review = await rome.request<any>("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token: Buffer.from(secret.data.token, "base64").toString() },
      },
    });
    expect(review.status.user.username).toBe("system:serviceaccount:demo:default");
  });

  test("a remote pod deleted by hand is re-created by the provider and counted as a restart locally", async () => {
    const before = await milan.get<Pod>(Resources.pods, "web", "demo-rome");
    await milan.delete(Resources.pods, "web", "demo-rome", { gracePeriodSeconds: 0 });
    await waitFor("a new remote pod", async () => {
      const p = await milan.find<Pod>(Resources.pods, "web", "demo-rome");
      return p && p.metadata.uid !== before.metadata.uid && p.status?.phase === "Running";
    });
    const shadow = await milan.get(ShadowPodResource, "web", "demo-rome");
    // Exactly one re-creation for one delete (kwok's stale deletes are guarded, as a kubelet's UID
    // precondition would), and the local restart count equals what the provider recorded.
    const recorded = Number(shadow.metadata.annotations?.[RECREATIONS_ANNOTATION]);
    expect(recorded).toBe(1);
    await waitFor(`the local restart count to be ${recorded}`, async () => {
      const p = await rome.get<Pod>(Resources.pods, "web", "demo");
      const current = Number(
        (await milan.get(ShadowPodResource, "web", "demo-rome")).metadata.annotations?.[RECREATIONS_ANNOTATION],
      );
      return p.status?.containerStatuses?.[0]?.restartCount === current;
    });
  });

  test("with the consumer gone, the provider still keeps the pod alive", async () => {
    await offloader.stop();
    try {
      const before = await milan.get<Pod>(Resources.pods, "web", "demo-rome");
      await milan.delete(Resources.pods, "web", "demo-rome", { gracePeriodSeconds: 0 });
      await waitFor("the provider to re-create the pod on its own", async () => {
        const p = await milan.find<Pod>(Resources.pods, "web", "demo-rome");
        return p && p.metadata.uid !== before.metadata.uid;
      });
    } finally {
      await startOffloader();
    }
  });

  test("deleting the local pod deletes the remote pod and ShadowPod, then the local pod goes away", async () => {
    await rome.delete(Resources.pods, "web", "demo", { gracePeriodSeconds: 30 });
    await waitFor("the ShadowPod to be gone", async () => !(await milan.find(ShadowPodResource, "web", "demo-rome")));
    await waitFor("the remote pod to be gone", async () => !(await milan.find(Resources.pods, "web", "demo-rome")));
    await waitFor("the local pod to be gone", async () => !(await rome.find(Resources.pods, "web", "demo")));
  });

  test("while the translation is pending the pod's status waits instead of showing the provider's own IP; then the translated IP, and a changed translation re-maps it", async () => {
    translation.pending = "milan's NetworkConfig is not processed";
    try {
      await rome.create(Resources.pods, pod("held", "demo"));
      const remote = await waitFor("the remote pod to run", async () => {
        const p = await milan.find<Pod>(Resources.pods, "held", "demo-rome");
        return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
      });
      // The offloader has looked at the running remote pod at least twice since (it asks each time),
      // or (the defect) already wrote a status.
      const askedBefore = translation.asked;
      await waitFor(
        "the offloader to look at the running pod twice",
        async () =>
          translation.asked >= askedBefore + 2 || (await rome.get<Pod>(Resources.pods, "held", "demo")).status?.podIP,
      );
      const waiting = await rome.get<Pod>(Resources.pods, "held", "demo");
      expect({ podIP: waiting.status?.podIP, phase: waiting.status?.phase }).toEqual({
        podIP: undefined,
        phase: "Pending",
      });
      const said = await waitFor("a PodIPNotTranslated Event on the pod", async () =>
        (
          await rome.list<Event>(Resources.events, {
            namespace: "demo",
            fieldSelector: `involvedObject.uid=${waiting.metadata.uid}`,
          })
        ).items.find((e) => e.reason === "PodIPNotTranslated"),
      );
      expect(said.message).toContain("milan's NetworkConfig is not processed");
      translation.pending = undefined;
      const shown = await waitFor("the translated IP on the local pod", async () => {
        const p = await rome.get<Pod>(Resources.pods, "held", "demo");
        return p.status?.podIP ? p : undefined;
      });
      expect(shown.status!.podIP).toBe(translateIp(remote.status!.podIP));
      expect(shown.status!.phase).toBe("Running");
      // A remap (the network manager mapped milan anew) reaches pods whose remote side did not change.
      translation.remapTo = "10.202.";
      offloader.resyncAll();
      await waitFor("the pod's IP re-mapped", async () => {
        const p = await rome.get<Pod>(Resources.pods, "held", "demo");
        return p.status?.podIP === remote.status!.podIP.replace(/^10\.101\./, "10.202.");
      });
    } finally {
      translation.pending = undefined;
      translation.remapTo = "10.201.";
      await rome.delete(Resources.pods, "held", "demo", { gracePeriodSeconds: 0 });
    }
  });

  test("a pod forced onto the virtual node in a namespace that is not offloaded stays Pending with OffloadingBackOff", async () => {
    const created = await rome.create(Resources.pods, pod("stray", "plain"));
    const p = await waitFor("the OffloadingBackOff status", async () => {
      const got = await rome.get<Pod>(Resources.pods, "stray", "plain");
      return got.status?.reason === OFFLOADING_BACKOFF ? got : undefined;
    });
    expect(p.status!.phase).toBe("Pending");
    expect(p.status!.message).toContain("liqoctl offload namespace plain");
    await waitFor("an OffloadingBackOff Event", async () => {
      const evs = await rome.list<Event>(Resources.events, {
        namespace: "plain",
        fieldSelector: `involvedObject.uid=${created.metadata.uid}`,
      });
      return evs.items.some((e) => e.reason === OFFLOADING_BACKOFF);
    });
    expect(await milan.find(ShadowPodResource, "stray", "plain")).toBeUndefined();
  });
});

describe("a claim's copy in the provider made for an earlier claim of that name, or being deleted", () => {
  test("the pod waits with OffloadingBackOff naming the claim; once a copy made for its claim is there, or none, it goes", async () => {
    const claim = (name: string) =>
      rome.create(Resources.persistentVolumeClaims, {
        metadata: { name, namespace: "demo" },
        spec: { storageClassName: "liqo", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      });
    const copy = (name: string, madeFor: string, finalizers?: string[]) =>
      milan.create(Resources.persistentVolumeClaims, {
        metadata: {
          name,
          namespace: "demo-rome",
          annotations: { [ORIGIN_CLAIM_UID_ANNOTATION]: madeFor },
          ...(finalizers && { finalizers }),
        },
        spec: {
          storageClassName: "standard",
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "1Gi" } },
        },
      });
    const heldBack = (name: string) =>
      waitFor(`pod ${name} held back with OffloadingBackOff`, async () => {
        const got = await rome.get<Pod>(Resources.pods, name, "demo");
        return got.status?.reason === OFFLOADING_BACKOFF ? (got.status.message as string) : undefined;
      });
    const copyGone = (name: string) =>
      waitFor(
        `the copy ${name} gone`,
        async () => !(await milan.find(Resources.persistentVolumeClaims, name, "demo-rome")),
      );
    const moved = await claim("moved");
    const held = await claim("held");
    // "moved": deleted and made again, its earlier copy still there. "held": its own copy, being deleted (a pod there holds it).
    await copy("moved", "uid-of-an-earlier-claim");
    await copy("held", held.metadata.uid!, ["liqo.test/in-use"]);
    await milan.delete(Resources.persistentVolumeClaims, "held", "demo-rome");
    for (const [name, c] of [
      ["mover", "moved"],
      ["holder", "held"],
    ] as const)
      await rome.create(
        Resources.pods,
        pod(name, "demo", { volumes: [{ name: "d", persistentVolumeClaim: { claimName: c } }] }),
      );
    try {
      expect(await heldBack("mover")).toContain("copy of claim demo/moved in cluster milan-cluster-id");
      expect(await heldBack("holder")).toContain("copy of claim demo/held in cluster milan-cluster-id");
      expect(await milan.find(ShadowPodResource, "mover", "demo-rome")).toBeUndefined();
      expect(await milan.find(ShadowPodResource, "holder", "demo-rome")).toBeUndefined();
      // The storage reflector's replacement: the earlier copy deleted, one made for this claim.
      await milan.delete(Resources.persistentVolumeClaims, "moved", "demo-rome");
      await copyGone("moved");
      await copy("moved", moved.metadata.uid!);
      await waitFor("mover's ShadowPod in milan", () => milan.find(ShadowPodResource, "mover", "demo-rome"));
      await milan.mergePatch(Resources.persistentVolumeClaims, "held", "demo-rome", { metadata: { finalizers: null } });
      await copyGone("held");
      await waitFor("holder's ShadowPod in milan", () => milan.find(ShadowPodResource, "holder", "demo-rome"));
    } finally {
      for (const name of ["mover", "holder"])
        await rome.delete(Resources.pods, name, "demo", { gracePeriodSeconds: 0 });
      for (const name of ["mover", "holder"])
        await waitFor(`pod ${name} gone`, async () => !(await rome.find(Resources.pods, name, "demo")));
      for (const name of ["moved", "held"]) {
        await rome.delete(Resources.persistentVolumeClaims, name, "demo");
        await milan.delete(Resources.persistentVolumeClaims, name, "demo-rome").catch(() => false);
      }
    }
  });
});

describe("the provider's ShadowPod controller", () => {
  test("a ShadowPod whose pod the API server refuses gets a PodCreationFailed Event, and nothing else breaks", async () => {
    await milan.create(ShadowPodResource, {
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "ShadowPod",
      metadata: { name: "broken", namespace: "demo-rome" },
      spec: { pod: { containers: [{ name: "BAD_NAME", image: "nginx" }] } },
    });
    const shadow = await milan.get(ShadowPodResource, "broken", "demo-rome");
    const ev = await waitFor("a PodCreationFailed Event", async () => {
      const evs = await milan.list<Event>(Resources.events, {
        namespace: "demo-rome",
        fieldSelector: `involvedObject.uid=${shadow.metadata.uid}`,
      });
      return evs.items.find((e) => e.reason === "PodCreationFailed");
    });
    expect(ev.message).toContain("demo-rome/broken");
    expect(await milan.find(Resources.pods, "broken", "demo-rome")).toBeUndefined();
  });

  test("a hostile peer's ShadowPods asking for root on the node (privileged, hostPath /, hostNetwork, hostPID, a host port, SYS_ADMIN) get no pod, each a PodCreationFailed Event naming the violation; the namespace it made privileged is baseline again; a plain pod next to them runs", async () => {
    // The peer creates its twin namespace itself, and tries to open it up.
    await milan.create(Resources.namespaces, {
      metadata: { name: "hostile-rome", labels: { [POD_SECURITY_ENFORCE_LABEL]: "privileged" } },
    });
    const shadow = (name: string, pod: Record<string, unknown>) =>
      milan.create(ShadowPodResource, {
        apiVersion: "virtualkubelet.liqo.io/v1alpha1",
        kind: "ShadowPod",
        metadata: { name, namespace: "hostile-rome" },
        spec: { pod },
      });
    const c = (extra: Record<string, unknown> = {}) => [{ name: "x", image: "nginx", ...extra }];
    const hostile: Record<string, [Record<string, unknown>, RegExp]> = {
      privileged: [{ containers: c({ securityContext: { privileged: true } }) }, /privileged/],
      "host-root": [
        { containers: c(), volumes: [{ name: "root", hostPath: { path: "/" } }] },
        /hostPath volumes \(volume "root"\)/,
      ],
      "host-network": [{ hostNetwork: true, containers: c() }, /host namespaces \(hostNetwork=true\)/],
      "host-pid": [{ hostPID: true, containers: c() }, /hostPID=true/],
      "host-port": [{ containers: c({ ports: [{ containerPort: 80, hostPort: 80 }] }) }, /hostPort/],
      "sys-admin": [{ containers: c({ securityContext: { capabilities: { add: ["SYS_ADMIN"] } } }) }, /SYS_ADMIN/],
    };
    for (const [name, [pod]] of Object.entries(hostile)) await shadow(name, pod);
    await shadow("plain", { containers: c() });
    await waitFor("the plain pod to run", async () => {
      const p = await milan.find<Pod>(Resources.pods, "plain", "hostile-rome");
      return p?.status?.phase === "Running";
    });
    const ns = await milan.get(Resources.namespaces, "hostile-rome");
    expect(ns.metadata.labels?.[POD_SECURITY_ENFORCE_LABEL]).toBe("baseline");
    for (const [name, [, violation]] of Object.entries(hostile)) {
      const uid = (await milan.get(ShadowPodResource, name, "hostile-rome")).metadata.uid;
      const ev = await waitFor(`${name}: a PodCreationFailed Event`, async () => {
        const evs = await milan.list<Event>(Resources.events, {
          namespace: "hostile-rome",
          fieldSelector: `involvedObject.uid=${uid}`,
        });
        return evs.items.find((e) => e.reason === "PodCreationFailed");
      });
      expect(ev.message).toContain(`cannot create pod hostile-rome/${name}`);
      expect(ev.message).toContain('violates PodSecurity "baseline');
      expect(ev.message).toMatch(violation);
      expect(await milan.find(Resources.pods, name, "hostile-rome")).toBeUndefined();
    }
  });

  test("the namespace label for a pod security level: written when missing, weaker or garbage; a stricter one is kept; privileged writes nothing", () => {
    expect(podSecurityLabelFor(undefined, "baseline")).toBe("baseline");
    expect(podSecurityLabelFor("privileged", "baseline")).toBe("baseline");
    expect(podSecurityLabelFor("Baseline ", "baseline")).toBe("baseline");
    expect(podSecurityLabelFor("baseline", "baseline")).toBeUndefined();
    expect(podSecurityLabelFor("restricted", "baseline")).toBeUndefined();
    expect(podSecurityLabelFor("baseline", "restricted")).toBe("restricted");
    expect(podSecurityLabelFor(undefined, "privileged")).toBeUndefined();
  });

  test("podFor keeps the ShadowPod's labels, drops its bookkeeping annotations, and is owned by it", () => {
    const out = podFor({
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "ShadowPod",
      metadata: {
        name: "a",
        namespace: "n",
        uid: "u1",
        labels: { app: "a" },
        annotations: { [RECREATIONS_ANNOTATION]: "3", keep: "me" },
      },
      spec: { pod: { containers: [] } },
    });
    expect(out.metadata.labels?.app).toBe("a");
    expect(out.metadata.labels?.["liqo.io/managed-by"]).toBe("shadowpod");
    expect(out.metadata.annotations).toEqual({ keep: "me" });
    expect(out.metadata.ownerReferences?.[0]?.uid).toBe("u1");
  });
});
