// A live IP translator for processes other than the network manager (the virtual kubelet),
// computed from what the API server holds: the two NetworkConfigs of a peering (ours, whose
// status says how the peer remapped our networks; the peer's, whose status we wrote with how we
// remapped its networks) and the peer's NatMapping (third-cluster endpoints). It gives the same
// answers as the manager's in-process translator, except that it never allocates itself: an
// endpoint with no NatMapping entry yet passes through (reported) and is *requested* through the
// API, as an annotation `endpoint-request.net.liqo.io/<ip>` on the peer's NatMapping. The network
// manager (another process, level-triggered on NatMappings) allocates the address, writes the entry
// into spec.clusterMappings and removes the request; the watcher then answers with it and tells its
// onChange listeners, so reflection re-runs. One annotation key per address: concurrent requests
// from several virtual kubelets never conflict, and a lost one is simply written again.
import { NatMappingResource, NAT_MAPPING_LABEL, type NatMapping } from "../../core/apis/net/natmapping.ts";
import { NetworkConfigResource, type NetworkConfig } from "../../core/apis/net/networkconfig.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { silentLogger, type Logger } from "../../core/log.ts";
import { contains, formatIpv4, parseCidr, parseIpv4, remapIp, type Cidr } from "../ipam/index.ts";
import { natOf } from "../shared/nat.ts";
import { networkConfigRole } from "./forge.ts";
import { CLUSTER_ID_LABEL } from "../shared/labels.ts";

export type Direction = "forward" | "backward";

/** What the translation needs, as the API objects hold it. */
export interface TranslationSources {
  remoteClusterId: string;
  /** Our NetworkConfig for the peer (status written by the peer). */
  local?: Pick<NetworkConfig, "spec" | "status">;
  /** The peer's NetworkConfig (status written by us). */
  remote?: Pick<NetworkConfig, "spec" | "status">;
  natMapping?: Pick<NatMapping, "spec">;
}

export class TranslationError extends Error {
  override name = "TranslationError";
  /** NoMapping: translatable, but the network manager has not allocated the address yet. */
  constructor(
    message: string,
    readonly code: "NotReady" | "NoMapping" | "Invalid" = "NotReady",
  ) {
    super(message);
  }
}

/** The annotation (on a NatMapping) asking the network manager for an external-CIDR address for one endpoint. */
export const ENDPOINT_REQUEST_PREFIX = "endpoint-request.net.liqo.io/";
export const endpointRequestKey = (ip: string) => `${ENDPOINT_REQUEST_PREFIX}${ip}`;

/** The endpoint addresses requested on a NatMapping (malformed keys are ignored: the manager reports them). */
export function requestedEndpoints(annotations: Record<string, string> | undefined): string[] {
  return Object.keys(annotations ?? {})
    .filter((k) => k.startsWith(ENDPOINT_REQUEST_PREFIX))
    .map((k) => k.slice(ENDPOINT_REQUEST_PREFIX.length));
}

const notProcessed = (id: string) =>
  `cluster ${id} has no networks here yet: its NetworkConfig is missing or not processed`;

/** Pure: why backward translation (the peer's pod IPs into ours) is impossible now, if it is. */
export function backwardPending(s: TranslationSources): string | undefined {
  return s.remote?.status?.processed ? undefined : notProcessed(s.remoteClusterId);
}

/**
 * Pure: what backward translation depends on (the peer's NetworkConfig: its pod CIDR and where we
 * put it), as a string that changes exactly when those do. NatMapping entries do not enter it.
 */
export function backwardKey(s: TranslationSources): string {
  const r = s.remote;
  return JSON.stringify([r?.spec?.podCIDR, r?.status?.processed, r?.status?.podCIDRNAT]);
}

/** Pure: one translation from the sources; throws TranslationError naming what is missing. */
export function translateWith(s: TranslationSources, ip: string, direction: Direction): string {
  const id = s.remoteClusterId;
  const address = parseIpv4(
    ip,
    direction === "backward" ? `pod IP from cluster ${id}` : `endpoint IP reflected to ${id}`,
  );
  const remote = s.remote;
  if (!remote?.status?.processed) throw new TranslationError(notProcessed(id));
  const remotePod = parseCidr(remote.spec.podCIDR, "remote podCIDR");
  const podHere = parseCidr(natOf(remote.status.podCIDRNAT ?? "", remote.spec.podCIDR), "remote podCIDRNAT");
  if (direction === "backward") {
    if (!contains(remotePod, address))
      throw new TranslationError(`${ip} is outside the podCIDR of cluster ${id} (${remote.spec.podCIDR})`, "Invalid");
    return formatIpv4(remapIp(address, remotePod, podHere));
  }
  const local = s.local;
  if (!local?.status?.processed || !local.status.podCIDRNAT || !local.status.externalCIDRNAT) {
    throw new TranslationError(
      `cluster ${id} has not reported how it remapped our networks (status of our NetworkConfig)`,
    );
  }
  const ourPod: Cidr = parseCidr(local.spec.podCIDR, "local podCIDR");
  if (contains(ourPod, address))
    return formatIpv4(remapIp(address, ourPod, parseCidr(natOf(local.status.podCIDRNAT, local.spec.podCIDR))));
  // The destination's own pod: its real address, not a hairpin through us.
  if (contains(podHere, address)) return formatIpv4(remapIp(address, podHere, remotePod));
  const mapped = s.natMapping?.spec.clusterMappings?.[ip];
  if (mapped) return mapped;
  throw new TranslationError(
    `no NatMapping entry for ${ip} towards cluster ${id} yet; requested from the network manager (annotation ${endpointRequestKey(ip)})`,
    "NoMapping",
  );
}

export interface TranslationWatcherOptions {
  client: KubeClient;
  remoteClusterId: string;
  logger?: Logger;
  onError?: (error: Error, ip: string, direction: Direction) => void;
  /** Whether to request missing third-cluster addresses from the network manager (default true). */
  requestMissing?: boolean;
}

export interface TranslationWatcher {
  translateIp(ip: string, direction: Direction): string;
  start(): Promise<void>;
  stop(): Promise<void>;
  synced(): boolean;
  sources(): TranslationSources;
  /**
   * Why the peer's pod IPs cannot be translated now (its NetworkConfig missing or not processed
   * here), or undefined when they can. translateIp passes such an address through unchanged: a
   * pod's status must wait instead, or this cluster routes the peer's address as one of its own.
   */
  pending(): string | undefined;
  /** backwardKey of the current sources: a change means the peer's pod IPs translate differently. */
  backwardKey(): string;
  /** Called when the peer's NetworkConfigs or NatMapping change, i.e. answers may have changed:
   * whoever reflected with an address passed through re-queues. Returns an unsubscribe. */
  onChange(listener: () => void): () => void;
}

export function createTranslationWatcher(o: TranslationWatcherOptions): TranslationWatcher {
  const log = (o.logger ?? silentLogger).child({ component: "translation-watch", peer: o.remoteClusterId });
  const configs = createInformer<NetworkConfig>({ client: o.client, resource: NetworkConfigResource, logger: log });
  const mappings = createInformer<NatMapping>({
    client: o.client,
    resource: NatMappingResource,
    labelSelector: `${NAT_MAPPING_LABEL.key}=${NAT_MAPPING_LABEL.value},${CLUSTER_ID_LABEL}=${o.remoteClusterId}`,
    logger: log,
  });
  function sources(): TranslationSources {
    const s: TranslationSources = { remoteClusterId: o.remoteClusterId };
    for (const c of configs.list()) {
      const role = networkConfigRole(c.metadata.labels);
      if (role?.clusterId !== o.remoteClusterId) continue;
      if (role.local) s.local = c;
      else s.remote = c;
    }
    s.natMapping = mappings.list()[0];
    return s;
  }
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of listeners) l();
  };
  const isPeer = (c: NetworkConfig) => networkConfigRole(c.metadata.labels)?.clusterId === o.remoteClusterId;
  configs.on({
    add: (c) => isPeer(c) && changed(),
    update: (_, c) => isPeer(c) && changed(),
    delete: (c) => isPeer(c) && changed(),
  });
  mappings.on({ add: changed, update: changed, delete: changed });

  // Requests in flight or written, so a hot path asking for one address patches once; an address
  // leaves the set when its request failed (written again on the next ask) or the entry appeared.
  const requested = new Set<string>();
  function request(ip: string, mapping: NatMapping | undefined) {
    if (o.requestMissing === false || !mapping?.metadata?.name || requested.has(ip)) return;
    if (mapping.metadata.annotations?.[endpointRequestKey(ip)] !== undefined) return;
    requested.add(ip);
    o.client
      .mergePatch(NatMappingResource, mapping.metadata.name, undefined, {
        metadata: { annotations: { [endpointRequestKey(ip)]: "" } },
      })
      .then(() => log.info("endpoint address requested from the network manager", { ip, key: mapping.metadata.name }))
      .catch((err) => {
        requested.delete(ip);
        log.warn("requesting an endpoint address failed; retried on the next reflection", {
          ip,
          err: (err as Error).message,
        });
      });
  }
  return {
    translateIp(ip, direction) {
      const s = sources();
      try {
        const out = translateWith(s, ip, direction);
        requested.delete(ip);
        return out;
      } catch (err) {
        if (err instanceof TranslationError && err.code === "NoMapping")
          request(ip, s.natMapping as NatMapping | undefined);
        // Called inside a plugin call: never throw, pass the address through and say why.
        const error = err as Error;
        if (o.onError) o.onError(error, ip, direction);
        else log.warn("address not translated", { ip, direction, err: error.message });
        return ip;
      }
    },
    async start() {
      configs.start();
      mappings.start();
      await Promise.all([configs.waitForSync(120_000), mappings.waitForSync(120_000)]);
    },
    async stop() {
      await Promise.all([configs.stop(), mappings.stop()]);
    },
    synced: () => configs.synced && mappings.synced,
    sources,
    pending: () => backwardPending(sources()),
    backwardKey: () => backwardKey(sources()),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
