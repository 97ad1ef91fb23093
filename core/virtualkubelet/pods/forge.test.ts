import { describe, expect, test } from "bun:test";
import {
  API_SERVER_SUPPORT_ANNOTATION,
  apiServerAddress,
  apiServerEnv,
  originServiceAccount,
  projectedTokens,
  remotePodSpec,
  remoteTokenSecret,
  remoteTokenSecretName,
  SERVICE_ACCOUNT_MOUNT,
  tokenRequests,
  withoutTokenVolume,
  type Pod,
} from "./forge.ts";

const address = { host: "172.30.0.1", port: "46443" };
const mount = { name: "kube-api-access-9x8lq", mountPath: SERVICE_ACCOUNT_MOUNT, readOnly: true };
const tokenVolume = {
  name: "kube-api-access-9x8lq",
  projected: {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
      { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
      {
        downwardAPI: {
          items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
        },
      },
    ],
  },
};
const data = { name: "data", emptyDir: {} };

/** A pod as rome's ServiceAccount admission leaves it: the token volume second, mounted in every container. */
function localPod(
  o: { annotations?: Record<string, string>; spec?: Record<string, unknown>; noToken?: boolean } = {},
): Pod {
  const mounts = o.noToken ? [] : [mount];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "operator", namespace: "liqo-demo", uid: "u-1", annotations: o.annotations },
    spec: {
      serviceAccountName: "reader",
      volumes: o.noToken ? [data] : [data, tokenVolume],
      initContainers: [{ name: "init", image: "hello", volumeMounts: mounts }],
      containers: [
        {
          name: "main",
          image: "hello",
          env: [{ name: "MODE", value: "x" }],
          volumeMounts: [{ name: "data", mountPath: "/data" }, ...mounts],
        },
        {
          name: "sidecar",
          image: "hello",
          env: [{ name: "KUBERNETES_SERVICE_HOST", value: "mine" }],
          volumeMounts: mounts,
        },
      ],
      ...o.spec,
    },
  } as Pod;
}

/** What the pods reflector answers for withoutTokenVolume(local): its spec without the service account. */
// biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
function reflected(local: Pod): Record<string, any> {
  const { serviceAccountName: _, ...spec } = withoutTokenVolume(local).spec!;
  return { ...spec, automountServiceAccountToken: false };
}

const forged = (local: Pod, a: typeof address | undefined) =>
  // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
  remotePodSpec(local, reflected(local), a) as Record<string, any>;

describe("remotePodSpec: a pod that mounts its token", () => {
  const spec = forged(localPod(), address);
  test("the provider's own token is not mounted", () => expect(spec.automountServiceAccountToken).toBe(false));
  test("the token volume is the pod's Secret, same name and place", () =>
    expect(spec.volumes).toEqual([
      data,
      { name: "kube-api-access-9x8lq", secret: { secretName: "operator-liqo-api-token", defaultMode: 420 } },
    ]));
  test("every container keeps its mount of it", () =>
    expect(
      // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
      spec.containers.map((c: any) => c.volumeMounts.filter((m: any) => m.mountPath === SERVICE_ACCOUNT_MOUNT).length),
    ).toEqual([1, 1]));
  test("init containers keep theirs", () => expect(spec.initContainers[0].volumeMounts).toEqual([mount]));
  test("containers get the origin address", () =>
    expect(spec.containers[0].env).toEqual([{ name: "MODE", value: "x" }, ...apiServerEnv(address)]));
  test("init containers get it too", () => expect(spec.initContainers[0].env).toEqual(apiServerEnv(address)));
  test("a variable the user set stays theirs", () =>
    // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
    expect(spec.containers[1].env.filter((e: any) => e.name === "KUBERNETES_SERVICE_HOST")).toEqual([
      { name: "KUBERNETES_SERVICE_HOST", value: "mine" },
    ]));
  test("the local pod is not changed", () => expect(localPod()).toEqual(localPod()));
});

describe("remotePodSpec: no origin token", () => {
  test.each([
    [
      "automountServiceAccountToken false on the pod (admission added nothing)",
      localPod({ noToken: true, spec: { automountServiceAccountToken: false } }),
      address,
    ],
    [
      "automountServiceAccountToken false on its ServiceAccount (admission added nothing)",
      localPod({ noToken: true }),
      address,
    ],
    ["the opt-out annotation", localPod({ annotations: { [API_SERVER_SUPPORT_ANNOTATION]: "disabled" } }), address],
    ["no origin API server address", localPod(), undefined],
  ])("%s", (_why, local, a) => {
    const spec = forged(local, a);
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.volumes).toEqual([data]);
    // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
    expect(spec.containers.flatMap((c: any) => c.volumeMounts)).toEqual([{ name: "data", mountPath: "/data" }]);
    expect(spec.initContainers[0].volumeMounts).toEqual([]);
    expect(
      // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
      spec.containers.flatMap((c: any) => c.env ?? []).filter((e: any) => e.name === "KUBERNETES_SERVICE_PORT"),
    ).toEqual([]);
  });
});

describe("originServiceAccount", () => {
  test.each([
    ["the pod's", localPod(), "reader"],
    ["default when unnamed", localPod({ spec: { serviceAccountName: undefined } }), "default"],
    ["none without the token volume", localPod({ noToken: true }), undefined],
    [
      "none when the pod says no (a hand-made token volume)",
      localPod({ spec: { automountServiceAccountToken: false } }),
      undefined,
    ],
    ["none when opted out", localPod({ annotations: { [API_SERVER_SUPPORT_ANNOTATION]: "disabled" } }), undefined],
    [
      "kept with another value of the annotation",
      localPod({ annotations: { [API_SERVER_SUPPORT_ANNOTATION]: "enabled" } }),
      "reader",
    ],
  ])("%s", (_what, pod, expected) => expect(originServiceAccount(pod, address)).toBe(expected));
});

describe("apiServerEnv", () => {
  const env = Object.fromEntries(apiServerEnv(address).map((e) => [e.name, e.value]));
  test("host", () => expect(env.KUBERNETES_SERVICE_HOST).toBe("172.30.0.1"));
  test("port", () => expect(env.KUBERNETES_SERVICE_PORT).toBe("46443"));
  test("https port", () => expect(env.KUBERNETES_SERVICE_PORT_HTTPS).toBe("46443"));
  test("docker-link form", () => expect(env.KUBERNETES_PORT).toBe("tcp://172.30.0.1:46443"));
  test("per-port form", () => expect(env.KUBERNETES_PORT_46443_TCP_ADDR).toBe("172.30.0.1"));
  test("IPv6 bracketed in URLs only", () =>
    expect(
      Object.fromEntries(apiServerEnv({ host: "fd00::1", port: "6443" }).map((e) => [e.name, e.value])).KUBERNETES_PORT,
    ).toBe("tcp://[fd00::1]:6443"));
});

describe("apiServerAddress", () => {
  test.each([
    ["https://172.30.0.1:46443", { host: "172.30.0.1", port: "46443" }],
    ["https://api.example.com", { host: "api.example.com", port: "443" }],
    ["https://[fd00::1]:6443/", { host: "fd00::1", port: "6443" }],
    ["http://172.30.0.1:8080", undefined],
    ["not a url", undefined],
    ["", undefined],
  ])("%s", (url, expected) => expect(apiServerAddress(url)).toEqual(expected));
});

describe("remoteTokenSecret", () => {
  const s = remoteTokenSecret(
    localPod(),
    "liqo-demo-rome-ae9e42",
    "rome-id",
    { name: "operator", uid: "sp-1" },
    { token: "tok", ca: "PEM" },
    // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
  ) as any;
  const text = (k: string) => Buffer.from(s.data[k], "base64").toString();
  test("named after the pod", () => expect(s.metadata.name).toBe("operator-liqo-api-token"));
  test("in the twin namespace", () => expect(s.metadata.namespace).toBe("liqo-demo-rome-ae9e42"));
  test("labelled as reflected from the origin", () =>
    expect(s.metadata.labels).toMatchObject({
      "liqo.io/managed-by": "reflection",
      "liqo.io/origin-cluster-id": "rome-id",
    }));
  test("owned by the ShadowPod (deleted with it)", () =>
    expect(s.metadata.ownerReferences).toEqual([
      { apiVersion: "virtualkubelet.liqo.io/v1alpha1", kind: "ShadowPod", name: "operator", uid: "sp-1" },
    ]));
  test("token", () => expect(text("token")).toBe("tok"));
  test("the origin CA", () => expect(text("ca.crt")).toBe("PEM"));
  test("the origin namespace", () => expect(text("namespace")).toBe("liqo-demo"));
});

describe("remoteTokenSecretName", () => {
  test("short names keep the pod's", () => expect(remoteTokenSecretName("web-0")).toBe("web-0-liqo-api-token"));
  test("long names stay valid and distinct", () => {
    const a = remoteTokenSecretName("a".repeat(250));
    const b = remoteTokenSecretName(`${"a".repeat(249)}b`);
    expect([a.length <= 253, b.length <= 253, a !== b]).toEqual([true, true, true]);
  });
});

describe("a pod's own projected tokens (an audience of its own)", () => {
  const vault = {
    name: "vault",
    projected: {
      sources: [
        { configMap: { name: "settings", items: [{ key: "a", path: "a" }] } },
        { serviceAccountToken: { audience: "vault", expirationSeconds: 900, path: "vault-token" } },
        { serviceAccountToken: { path: "plain", expirationSeconds: 60 } },
      ],
    },
  };
  const withVault = (o: Parameters<typeof localPod>[0] = {}) => {
    const p = localPod(o);
    return { ...p, spec: { ...p.spec, volumes: [...p.spec!.volumes!, vault] } } as Pod;
  };
  test("found in every projected volume but admission's, with audience, lifetime (at least 600 s) and path", () =>
    expect(projectedTokens(withVault())).toEqual([
      { key: "vault.1.token", volume: "vault", audience: "vault", expirationSeconds: 900, path: "vault-token" },
      { key: "vault.2.token", volume: "vault", audience: undefined, expirationSeconds: 600, path: "plain" },
    ]));
  test("the reflector never sees them (it would wait for a legacy token Secret)", () =>
    expect(withoutTokenVolume(withVault()).spec!.volumes!.at(-1)).toEqual({
      name: "vault",
      projected: { sources: [vault.projected.sources[0]!] },
    }));
  test("the remote volume reads each from the token Secret at its path; other sources stay, in order", () =>
    expect(forged(withVault(), address).volumes.at(-1)).toEqual({
      name: "vault",
      projected: {
        sources: [
          vault.projected.sources[0],
          { secret: { name: "operator-liqo-api-token", items: [{ key: "vault.1.token", path: "vault-token" }] } },
          { secret: { name: "operator-liqo-api-token", items: [{ key: "vault.2.token", path: "plain" }] } },
        ],
      },
    }));
  test("also without the API token (automountServiceAccountToken false) or an origin address: minted all the same", () => {
    const p = withVault({ noToken: true, spec: { automountServiceAccountToken: false } });
    expect(tokenRequests(p, undefined)).toEqual({
      serviceAccount: "reader",
      tokens: [
        { key: "vault.1.token", audience: "vault", expirationSeconds: 900 },
        { key: "vault.2.token", audience: undefined, expirationSeconds: 600 },
      ],
    });
  });
  test("with the API token: both, the API one first under key token", () =>
    expect(tokenRequests(withVault(), address)!.tokens.map((t) => t.key)).toEqual([
      "token",
      "vault.1.token",
      "vault.2.token",
    ]));
  test("opted out: no token at all; the other sources stay", () => {
    const p = withVault({ annotations: { [API_SERVER_SUPPORT_ANNOTATION]: "disabled" } });
    expect(tokenRequests(p, address)).toBeUndefined();
    expect(forged(p, address).volumes.at(-1)).toEqual({
      name: "vault",
      projected: { sources: [vault.projected.sources[0]!] },
    });
  });
  test("in the Secret under their keys, next to the API token", () => {
    const s = remoteTokenSecret(
      withVault(),
      "twin",
      "rome-id",
      { name: "operator", uid: "sp-1" },
      { token: "tok", ca: "PEM", projected: { "vault.1.token": "jwt" } },
      // biome-ignore lint/suspicious/noExplicitAny: the forged pod spec, walked field by field (typed, each step would need a non-null assertion)
    ) as any;
    expect(Object.keys(s.data).sort()).toEqual(["ca.crt", "namespace", "token", "vault.1.token"]);
    expect(Buffer.from(s.data["vault.1.token"], "base64").toString()).toBe("jwt");
  });
  test("a pod without them: no token requests, the spec as before", () => {
    expect(projectedTokens(localPod())).toEqual([]);
    expect(tokenRequests(localPod({ noToken: true }), address)).toBeUndefined();
  });
});
