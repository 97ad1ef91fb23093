// API server support, as Liqo v0.5: an offloaded pod that mounts its ServiceAccount token talks to
// its origin cluster's API server, not the provider's. The remote pod mounts a Secret we keep in the
// twin namespace (a token of the local ServiceAccount bound to the local pod, the origin CA, the
// origin namespace) where the local one had its projected kube-api-access volume, and its
// KUBERNETES_SERVICE_* variables name the origin API server as peers reach it. Pure: the token
// itself is asked for and refreshed by the offloader (tokens.ts).
import { LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION } from "../../reflection/abi.ts";
import type { KubeObject } from "../../kube/resources.ts";
import type { Container, Pod, PodSpec } from "../../kube/types.ts";

/** On a local pod, "disabled" keeps the origin token and address out of its remote copy. */
export const API_SERVER_SUPPORT_ANNOTATION = "liqo.io/api-server-support";
export const SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";
/** Marks the token Secrets (next to the reflected ones, which carry the same ownership labels). */
export const TOKEN_SECRET_LABEL = "liqo.io/api-server-token";

/** The origin API server as pods of the provider reach it. */
export interface ApiServerAddress {
  host: string;
  port: string;
}

export type { Pod };

/** "https://203.0.113.10:6443" → its host and port; undefined for anything but an https URL. */
export function apiServerAddress(url: string | undefined): ApiServerAddress | undefined {
  if (!url) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== "https:" || !u.hostname) return undefined;
  // An IPv6 literal comes bracketed; the variable holds the bare address, as the kubelet writes it.
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: u.port || "443" };
}

/** The index of the projected token volume the ServiceAccount admission plugin added, or -1. */
export function tokenVolumeIndex(spec: PodSpec | undefined): number {
  const volumes = spec?.volumes ?? [];
  const mountedAtSaPath = new Set(
    [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])]
      .flatMap((c) => c.volumeMounts ?? [])
      .filter((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT)
      .map((m) => m.name),
  );
  return volumes.findIndex(
    (v) =>
      v.projected?.sources?.some((s) => "serviceAccountToken" in s) &&
      (v.name!.startsWith("kube-api-access-") || mountedAtSaPath.has(v.name!)),
  );
}

/**
 * The local ServiceAccount whose token the remote pod gets, or undefined: the pod mounts no token
 * (automountServiceAccountToken false on the pod or its ServiceAccount: admission added none), it
 * opted out with the annotation, or this virtual kubelet was not told the origin API server address.
 */
export function originServiceAccount(local: Pod, address: ApiServerAddress | undefined): string | undefined {
  if (!address || local.spec?.automountServiceAccountToken === false) return undefined;
  if (local.metadata.annotations?.[API_SERVER_SUPPORT_ANNOTATION] === "disabled") return undefined;
  if (tokenVolumeIndex(local.spec) < 0) return undefined;
  return local.spec?.serviceAccountName || "default";
}

/** The Secret in the twin namespace holding the origin token of one pod. */
export function remoteTokenSecretName(podName: string): string {
  const name = `${podName}-liqo-api-token`;
  if (name.length <= 253) return name;
  const hash = new Bun.CryptoHasher("sha256").update(podName).digest("hex").slice(0, 10);
  return `${podName.slice(0, 253 - 27)}-${hash}-liqo-api-token`;
}

/**
 * A serviceAccountToken source the pod declares in a projected volume of its own (an audience
 * of its own, e.g. Vault's or a service mesh's, and its own lifetime): the origin cluster mints
 * it too, bound to the local pod, and the remote pod reads it from the token Secret at its path.
 */
export interface ProjectedToken {
  /** Its key in the token Secret. */
  key: string;
  volume: string;
  audience?: string;
  expirationSeconds: number;
  path: string;
}

/** What a kubelet gives a projected token that does not say (and the API server's minimum). */
export const PROJECTED_TOKEN_SECONDS = 3600;
export const MIN_TOKEN_SECONDS = 600;

type TokenSource = { serviceAccountToken?: { audience?: string; expirationSeconds?: number; path?: string } };

/** The pod's own projected tokens, every volume but the one admission added (tokenVolumeIndex). */
export function projectedTokens(local: Pod): ProjectedToken[] {
  const skip = tokenVolumeIndex(local.spec);
  const out: ProjectedToken[] = [];
  (local.spec?.volumes ?? []).forEach((v, i) => {
    if (i === skip) return;
    (v.projected?.sources ?? []).forEach((src, j) => {
      const t = (src as TokenSource).serviceAccountToken;
      if (!t) return;
      const seconds = Number(t.expirationSeconds) || PROJECTED_TOKEN_SECONDS;
      out.push({
        key: `${v.name}.${j}.token`,
        volume: v.name!,
        audience: t.audience || undefined,
        expirationSeconds: Math.max(MIN_TOKEN_SECONDS, Math.floor(seconds)),
        path: t.path ?? "token",
      });
    });
  });
  return out;
}

/** The tokens the origin cluster mints for the remote pod: the API one (key "token") and the pod's projected ones. */
export function tokenRequests(
  local: Pod,
  address: ApiServerAddress | undefined,
): { serviceAccount: string; tokens: { key: string; audience?: string; expirationSeconds: number }[] } | undefined {
  const main = originServiceAccount(local, address);
  const projected =
    local.metadata.annotations?.[API_SERVER_SUPPORT_ANNOTATION] === "disabled" ? [] : projectedTokens(local);
  const tokens = [
    ...(main ? [{ key: "token", expirationSeconds: 3600 }] : []),
    ...projected.map(({ key, audience, expirationSeconds }) => ({ key, audience, expirationSeconds })),
  ];
  return tokens.length ? { serviceAccount: local.spec?.serviceAccountName || "default", tokens } : undefined;
}

/**
 * The local pod as the pods reflector sees it: without the token volume and without the token
 * sources of its own projected volumes, which remotePodSpec rewires (the reflector would otherwise
 * look for a legacy token Secret of the ServiceAccount).
 */
export function withoutTokenVolume(local: Pod): Pod {
  const idx = tokenVolumeIndex(local.spec);
  const own = projectedTokens(local).length > 0;
  if (idx < 0 && !own) return local;
  const volumes = local
    .spec!.volumes!.filter((_, i) => i !== idx)
    .map((v) =>
      !own || !v.projected?.sources?.some((s) => "serviceAccountToken" in s)
        ? v
        : {
            ...v,
            projected: { ...v.projected, sources: v.projected.sources.filter((s) => !("serviceAccountToken" in s)) },
          },
    );
  return { ...local, spec: { ...local.spec, volumes } };
}

/**
 * The pod's own projected volumes with their token sources back, each now read from the token
 * Secret (a secret projection of its key, at its path); with API server support disabled, none.
 */
function withProjectedTokens(spec: PodSpec, local: Pod): void {
  const tokens = projectedTokens(local);
  if (!tokens.length || !spec.volumes) return;
  const disabled = local.metadata.annotations?.[API_SERVER_SUPPORT_ANNOTATION] === "disabled";
  const secretName = remoteTokenSecretName(local.metadata.name!);
  const localVolumes = new Map((local.spec?.volumes ?? []).map((v) => [v.name, v]));
  spec.volumes = spec.volumes.map((v) => {
    const mine = tokens.filter((t) => t.volume === v.name);
    if (!mine.length || !v.projected) return v;
    const reflected = [...(v.projected.sources ?? [])];
    const sources = (localVolumes.get(v.name)!.projected!.sources ?? []).flatMap((src, j) => {
      if (!("serviceAccountToken" in src)) return reflected.length ? [reflected.shift()!] : [];
      const t = mine.find((x) => x.key === `${v.name}.${j}.token`)!;
      return disabled ? [] : [{ secret: { name: secretName, items: [{ key: t.key, path: t.path }] } }];
    });
    return { ...v, projected: { ...v.projected, sources } };
  });
}

/** The variables client libraries read to find the API server in a pod (the kubelet sets the provider's). */
export function apiServerEnv(a: ApiServerAddress): { name: string; value: string }[] {
  const tcp = `tcp://${a.host.includes(":") ? `[${a.host}]` : a.host}:${a.port}`;
  const prefix = `KUBERNETES_PORT_${a.port}_TCP`;
  return [
    { name: "KUBERNETES_SERVICE_HOST", value: a.host },
    { name: "KUBERNETES_SERVICE_PORT", value: a.port },
    { name: "KUBERNETES_SERVICE_PORT_HTTPS", value: a.port },
    { name: "KUBERNETES_PORT", value: tcp },
    { name: prefix, value: tcp },
    { name: `${prefix}_PROTO`, value: "tcp" },
    { name: `${prefix}_PORT`, value: a.port },
    { name: `${prefix}_ADDR`, value: a.host },
  ];
}

/** A container with the origin variables; a variable the user set stays theirs. */
function withApiServerEnv(c: Container, env: { name: string; value: string }[]): Container {
  const own = new Set((c.env ?? []).map((e) => e.name));
  return { ...c, env: [...(c.env ?? []), ...env.filter((e) => !own.has(e.name))] };
}

function withoutMountsOf(c: Container, volume: string): Container {
  if (!c.volumeMounts?.some((m) => m.name === volume)) return c;
  return { ...c, volumeMounts: c.volumeMounts.filter((m) => m.name !== volume) };
}

/**
 * The remote pod's spec from the pods reflector's (given withoutTokenVolume(local)): the provider's
 * own token never mounted; where the local pod had its token volume, the origin token Secret under
 * the same name (so every container's mount stays as admission wrote it) and the origin address in
 * every container; without API server support, no token at all (the mounts go too).
 */
export function remotePodSpec(local: Pod, reflected: PodSpec, address: ApiServerAddress | undefined): PodSpec {
  const spec: PodSpec = { ...reflected, automountServiceAccountToken: false };
  withProjectedTokens(spec, local);
  const idx = tokenVolumeIndex(local.spec);
  const tokenVolume = local.spec?.volumes?.[idx];
  if (idx < 0 || !tokenVolume) return spec;
  const mapContainers = (f: (c: Container) => Container) => {
    if (spec.containers) spec.containers = spec.containers.map(f);
    if (spec.initContainers) spec.initContainers = spec.initContainers.map(f);
  };
  if (!originServiceAccount(local, address)) {
    mapContainers((c) => withoutMountsOf(c, tokenVolume.name!));
    return spec;
  }
  const secret: Record<string, unknown> = { secretName: remoteTokenSecretName(local.metadata.name!) };
  if (tokenVolume.projected?.defaultMode !== undefined) secret.defaultMode = tokenVolume.projected.defaultMode;
  const volumes = [...(spec.volumes ?? [])];
  volumes.splice(Math.min(idx, volumes.length), 0, { name: tokenVolume.name, secret });
  spec.volumes = volumes;
  const env = apiServerEnv(address!);
  mapContainers((c) => withApiServerEnv(c, env));
  return spec;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

export interface OriginToken {
  /** The API token (the kube-api-access volume's); absent when the pod mounts only projected tokens of its own. */
  token?: string;
  /** PEM of the origin cluster's CA (its kube-root-ca.crt). */
  ca: string;
  /** The pod's own projected tokens, by their key (ProjectedToken.key). */
  projected?: Record<string, string>;
}

/**
 * The token Secret of a remote pod. Owned by its ShadowPod, so the provider's garbage collector
 * deletes it with the pod; the owner reference also keeps the secrets reflector from taking it
 * for a stale copy of a local Secret.
 */
export function remoteTokenSecret(
  local: Pod,
  remoteNamespace: string,
  localClusterId: string,
  shadowPod: { name: string; uid: string },
  t: OriginToken,
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name: remoteTokenSecretName(local.metadata.name!),
      namespace: remoteNamespace,
      labels: {
        [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION,
        [LABEL_ORIGIN]: localClusterId,
        [TOKEN_SECRET_LABEL]: "true",
      },
      ownerReferences: [
        { apiVersion: "virtualkubelet.liqo.io/v1alpha1", kind: "ShadowPod", name: shadowPod.name, uid: shadowPod.uid },
      ],
    },
    // The keys of a ServiceAccount token volume; the namespace is the origin one, the token's.
    data: {
      ...(t.token === undefined ? {} : { token: b64(t.token) }),
      "ca.crt": b64(t.ca),
      namespace: b64(local.metadata.namespace!),
      ...Object.fromEntries(Object.entries(t.projected ?? {}).map(([k, v]) => [k, b64(v)])),
    },
  } as KubeObject;
}
