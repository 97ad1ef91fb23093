import { describe, expect, test } from "bun:test";
import { createInterner, podSlimmer, slimMetadata, withoutManagedFields } from "./slim.ts";
import type { KubeObject } from "./resources.ts";

/** A replica as the API server sends it: each call parses a new object, as a watch event does. */
function replica(n: number): KubeObject {
  return JSON.parse(
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: `web-${n}`,
        namespace: "shop",
        uid: `uid-${n}`,
        labels: { app: "web", "pod-template-hash": "5d8f" },
        ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-5d8f", uid: "rs-1" }],
        managedFields: [{ manager: "kube-controller-manager" }],
      },
      spec: {
        nodeName: "liqo-milan",
        tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } },
        containers: [
          {
            name: "nginx",
            image: "nginx",
            resources: { requests: { cpu: "10m" } },
            volumeMounts: [
              { name: `kube-api-access-${n}`, mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" },
            ],
          },
        ],
        volumes: [
          {
            name: `kube-api-access-${n}`,
            projected: {
              defaultMode: 420,
              sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: "token" } }],
            },
          },
        ],
      },
      status: { phase: "Running", podIP: `10.0.0.${n}` },
    }),
  );
}

describe("the interner", () => {
  test("equal parts come back as one frozen copy; other values as they are", () => {
    const intern = createInterner();
    const a = intern({ app: "web", tier: "front" });
    expect(intern({ app: "web", tier: "front" })).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(intern({ app: "db" })).not.toBe(a);
    expect(intern("text")).toBe("text");
    expect(intern(undefined)).toBeUndefined();
    expect(intern(null)).toBeNull();
  });

  test("a shared part cannot be written through one of its holders", () => {
    const intern = createInterner();
    const tolerations = intern([{ key: "k", operator: "Exists" }]);
    expect(() => {
      (tolerations as { key: string }[]).push({ key: "x" });
    }).toThrow();
    expect(() => {
      (tolerations[0] as { key: string }).key = "changed";
    }).toThrow();
    expect(tolerations).toEqual([{ key: "k", operator: "Exists" }]);
  });

  test("bounded: past `max` parts the table starts over, and what it returns is still equal", () => {
    const intern = createInterner(3);
    const first = intern({ n: 0 });
    for (let i = 1; i <= 3; i++) intern({ n: i });
    const again = intern({ n: 0 });
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
  });
});

describe("podSlimmer", () => {
  test("a slimmed pod equals the pod without managedFields", () => {
    const slim = podSlimmer();
    const p = replica(1);
    expect(slim(p)).toEqual(withoutManagedFields(replica(1)));
  });

  test("replicas share labels, owner, tolerations, affinity, container settings and the token projection", () => {
    const slim = podSlimmer();
    // biome-ignore lint/suspicious/noExplicitAny: reaching into the pod spec's fields under test
    const [a, b] = [slim(replica(1)), slim(replica(2))] as any[];
    expect(b.metadata.labels).toBe(a.metadata.labels);
    expect(b.metadata.ownerReferences).toBe(a.metadata.ownerReferences);
    expect(b.spec.tolerations).toBe(a.spec.tolerations);
    expect(b.spec.affinity).toBe(a.spec.affinity);
    expect(b.spec.containers[0].resources).toBe(a.spec.containers[0].resources);
    expect(b.spec.volumes[0].projected).toBe(a.spec.volumes[0].projected);
    // What differs stays each pod's own.
    expect(b.spec.volumes[0].name).toBe("kube-api-access-2");
    expect(b.spec.containers[0].volumeMounts[0].name).toBe("kube-api-access-2");
    expect(b.status).toEqual({ phase: "Running", podIP: "10.0.0.2" });
  });

  test("a pod without spec, or with parts missing, is slimmed as it is", () => {
    const slim = podSlimmer();
    const bare = { apiVersion: "v1", kind: "Pod", metadata: { name: "x" } } as KubeObject;
    expect(slim(bare)).toEqual(bare);
  });
});

describe("slimMetadata", () => {
  test("metadata only, without managedFields; labels shared, owner references each object's own", () => {
    const slim = slimMetadata();
    // biome-ignore lint/suspicious/noExplicitAny: reaching into the metadata under test
    const [a, b] = [slim(replica(1)), slim(replica(2))] as any[];
    expect(a).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      metadata: withoutManagedFields(replica(1)).metadata,
    });
    expect(b.metadata.labels).toBe(a.metadata.labels);
    expect(b.metadata.ownerReferences).not.toBe(a.metadata.ownerReferences);
  });
});
