// The provider's half of service continuity: the EndpointSlices a consumer's reflection wrote into
// its twin namespaces here are marked not ready once that consumer has been out of reach longer
// than the threshold, and put back when it returns (endpoints.ts says exactly what changes). In a
// one-way peering the provider holds no credentials to the consumer, so its signal is the data
// plane: the active gateway pings each peer's gateway through the tunnel every pass and writes when
// the current run of failed pings began on the peer's TunnelEndpoint
// (status.connection.peerConfiguration.unreachableSince, netfabric/gateway/status.ts).
import { TunnelEndpointResource, type TunnelEndpoint } from "../apis/net/tunnelendpoint.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../kube/errors.ts";
import { createEventRecorder } from "../kube/events.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import { objectKey, Resources } from "../kube/resources.ts";
import { createWorkQueue, type WorkQueue } from "../kube/workqueue.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION } from "../reflection/abi.ts";
import {
  CONTINUITY_FIELD_MANAGER,
  planSlice,
  UNREACHABLE_SINCE_ANNOTATION,
  type EndpointSliceObject,
} from "./endpoints.ts";
import { crossesAt, pastThreshold } from "./threshold.ts";

const SLICE_MANAGED_BY = "endpointslice.kubernetes.io/managed-by";
/** What the endpointslices reflector sets on its copies (reflectors/endpointslices). */
const REFLECTED_SLICE_MANAGER = "endpointslice.reflection.liqo.io";

/** The key the gateway writes on a TunnelEndpoint's status.connection.peerConfiguration. */
export const UNREACHABLE_SINCE_KEY = "unreachableSince";

/** When the peer of a TunnelEndpoint stopped answering through the tunnel (ms), if it has. */
export function unreachableSinceOf(tep: TunnelEndpoint): number | undefined {
  const text = tep.status?.connection?.peerConfiguration?.[UNREACHABLE_SINCE_KEY];
  const ms = text ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * When a peer stopped answering through the tunnel (ms), from the TunnelEndpoints: the earliest
 * outage among the peer's (one per peer, normally), undefined while any of them answers. No
 * TunnelEndpoint (a peering without networking): nothing says the peer is gone. The MCS importer
 * reads it too (core/mcs).
 */
export function peerUnreachableSince(teps: readonly TunnelEndpoint[], clusterId: string): number | undefined {
  const found = teps.filter((t) => t.spec?.clusterID === clusterId).map(unreachableSinceOf);
  if (!found.length || found.some((s) => s === undefined)) return undefined;
  return Math.min(...(found as number[]));
}

export interface ContinuityControllerOptions {
  client: KubeClient;
  thresholdMs: number;
  logger?: Logger;
  registry?: Registry;
  now?: () => number;
}

export function createContinuityController(o: ContinuityControllerOptions) {
  const log = (o.logger ?? silentLogger).child({ component: "service-continuity" });
  const now = o.now ?? Date.now;
  const events = createEventRecorder(o.client, "liqo-service-continuity", log);
  const changes = o.registry?.counter<"action">({
    name: "liqo_service_continuity_changes_total",
    help: "Reflected EndpointSlices marked not ready (mark), put back (restore), or left as their consumer rewrote them (forget)",
    labelNames: ["action"],
  });
  const teps: Informer<TunnelEndpoint> = createInformer({
    client: o.client,
    resource: TunnelEndpointResource,
    logger: log,
  });
  const slices: Informer<EndpointSliceObject> = createInformer({
    client: o.client,
    resource: Resources.endpointSlices,
    // The reflected slices only: the EndpointSlice controller copies a reflected Service's labels onto
    // the provider's own slices of it (its endpoints are the offloaded pods here, reachable).
    labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_REFLECTION},${SLICE_MANAGED_BY}=${REFLECTED_SLICE_MANAGER}`,
    logger: log,
  });
  o.registry?.callbackGauge({
    name: "liqo_service_continuity_unready_endpointslices",
    help: "Reflected EndpointSlices held not ready because the consumer they came from is unreachable",
    collect: () => slices.list().filter((s) => s.metadata.annotations?.[UNREACHABLE_SINCE_ANNOTATION]).length,
  });
  let queue: WorkQueue | undefined;

  /** The earliest outage among the peer's TunnelEndpoints (one per peer, normally). */
  const unreachableSince = (clusterId: string) => peerUnreachableSince(teps.list(), clusterId);

  async function handle(key: string): Promise<void> {
    const slice = slices.get(key);
    const origin = slice?.metadata.labels?.[LABEL_ORIGIN];
    // Reflection never sets owners: an owned slice is someone else's, whatever its labels say.
    if (!slice || !origin || slice.metadata.ownerReferences?.length) return;
    const since = unreachableSince(origin);
    const at = now();
    const plan = planSlice(slice, since, pastThreshold(since, at, o.thresholdMs));
    if (plan.action !== "none") {
      try {
        await o.client.jsonPatch(Resources.endpointSlices, slice.metadata.name!, slice.metadata.namespace, plan.ops, {
          fieldManager: CONTINUITY_FIELD_MANAGER,
        });
      } catch (err) {
        if (err instanceof KubeApiError && err.notFound) return;
        // Changed meanwhile (the consumer's reflection wrote it): decide again on the new version.
        if (err instanceof KubeApiError && (err.status === 409 || err.status === 422))
          throw new RetryAfterError(200, `EndpointSlice ${key} changed meanwhile; re-reading`);
        throw err;
      }
      changes?.inc({ action: plan.action });
      const seconds = since === undefined ? 0 : Math.round((at - since) / 1000);
      if (plan.action === "mark") {
        log.warn("consumer unreachable: its endpoints marked not ready", { key, origin, seconds });
        events.warning(
          slice,
          "EndpointsNotReady",
          `cluster ${origin} has not answered through the tunnel for ${seconds} s (threshold ${o.thresholdMs / 1000} s): its endpoints are marked not ready until it does`,
        );
      } else {
        log.info("consumer reachable again: its endpoints as it reflected them", { key, origin, action: plan.action });
        events.normal(
          slice,
          "EndpointsReady",
          `cluster ${origin} answers through the tunnel again: its endpoints are back as it reflected them`,
        );
      }
    }
    const due = crossesAt(since, at, o.thresholdMs);
    if (due !== undefined) {
      queue?.forget(key);
      throw new RetryAfterError(Math.max(0, due - at));
    }
  }

  const enqueueOrigin = (tep: TunnelEndpoint) => {
    for (const s of slices.list())
      if (s.metadata.labels?.[LABEL_ORIGIN] === tep.spec?.clusterID) queue?.add(objectKey(s));
  };

  return {
    handle,
    /** When a peer's tunnel stopped answering, as its TunnelEndpoint says (the consumer side reads it too). */
    unreachableSince,
    async start() {
      queue = createWorkQueue({ name: "service-continuity", handler: handle, workers: 4, logger: log });
      slices.on({ add: (s) => queue!.add(objectKey(s)), update: (_a, b) => queue!.add(objectKey(b)) });
      teps.on({ add: enqueueOrigin, update: (_a, b) => enqueueOrigin(b), delete: enqueueOrigin });
      slices.start();
      teps.start();
      await Promise.all([slices.waitForSync(), teps.waitForSync()]);
      queue.start();
      log.info("service continuity running", { thresholdMs: o.thresholdMs });
    },
    async stop() {
      await queue?.shutdown();
      await Promise.all([slices.stop(), teps.stop()]);
    },
  };
}
