// The pod mutating webhook: pods created in a namespace with a NamespaceOffloading get the
// scheduling constraints of its pod offloading strategy and cluster selector (see pods.ts).
import * as v from "valibot";
import { DEFAULT_NAMESPACE_OFFLOADING_NAME, NamespaceOffloadingResource } from "../apis/index.ts";
import { SCHEDULING_ENABLED_LABEL, SCHEDULING_ENABLED_VALUE } from "../apis/labels.ts";
import { isShadowPodControlled } from "../apis/virtualkubelet/shadowpod.ts";
import type { KubeClient } from "../kube/client.ts";
import { createInformer } from "../kube/informer.ts";
import { keyOf, type KubeObject, type ResourceRef } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { SelectorTerm } from "../kube/node-affinity.ts";
import type { Registry } from "../metrics/index.ts";
import { admissionOperation, createAdmissionMetrics, type AdmissionResult } from "./metrics.ts";
import { hostNamespacesProblem, mutatePodSpec, specPatch, type PodOffloadingStrategy } from "./pods.ts";

export const MutatingWebhookConfigurations: ResourceRef = {
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "MutatingWebhookConfiguration",
  plural: "mutatingwebhookconfigurations",
  namespaced: false,
};
export const POD_WEBHOOK_PATH = "/mutate/pods";
/** The webhook's name in the MutatingWebhookConfiguration, and its `webhook` label on /metrics. */
export const POD_WEBHOOK_NAME = "pod.mutate.liqo.io";

const AdmissionReview = v.object({
  apiVersion: v.literal("admission.k8s.io/v1", "apiVersion must be admission.k8s.io/v1"),
  kind: v.literal("AdmissionReview", "kind must be AdmissionReview"),
  request: v.object(
    {
      uid: v.pipe(v.string(), v.minLength(1, "request.uid is required")),
      namespace: v.optional(v.string()),
      operation: v.string(),
      object: v.looseObject({
        metadata: v.optional(
          v.looseObject({
            name: v.optional(v.string()),
            ownerReferences: v.optional(
              v.array(
                v.looseObject({
                  apiVersion: v.optional(v.string()),
                  kind: v.optional(v.string()),
                  controller: v.optional(v.boolean()),
                }),
              ),
            ),
          }),
        ),
        spec: v.optional(v.record(v.string(), v.unknown())),
      }),
    },
    "request is required",
  ),
});

export type Offloading = KubeObject & {
  spec?: { podOffloadingStrategy?: PodOffloadingStrategy; clusterSelector?: { nodeSelectorTerms?: SelectorTerm[] } };
  status?: { offloadingPhase?: string };
};

const NOT_JSON = Symbol("not JSON");

/** What the webhook answers to one POST: the HTTP status and body, and how it is counted. */
export interface PodAdmission {
  status: number;
  body: unknown;
  /** The request's operation (CREATE, ...), "unknown" when the body is no AdmissionReview. */
  operation: string;
  result: AdmissionResult;
}

/**
 * The pod webhook's decision for one request body: allowed (with the scheduling patch), denied
 * (with the reason), or an error (400: not an AdmissionReview). `offloadingOf` finds a namespace's
 * NamespaceOffloading in the cache.
 */
export function reviewPodAdmission(
  body: unknown,
  offloadingOf: (namespace: string) => Offloading | undefined,
  log: Logger = silentLogger,
): PodAdmission {
  const problem = (message: string): PodAdmission => ({
    status: 400,
    body: { message },
    operation: "unknown",
    result: "error",
  });
  if (body === NOT_JSON) return problem("the body is not JSON; expected an admission.k8s.io/v1 AdmissionReview");
  const parsed = v.safeParse(AdmissionReview, body);
  if (!parsed.success) return problem(`not a valid AdmissionReview: ${parsed.issues[0].message}`);
  const { request } = parsed.output;
  const operation = admissionOperation(request.operation);
  const allow = (patch?: unknown[]): PodAdmission => ({
    status: 200,
    body: {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid: request.uid,
        allowed: true,
        ...(patch?.length
          ? { patchType: "JSONPatch", patch: Buffer.from(JSON.stringify(patch)).toString("base64") }
          : {}),
      },
    },
    operation,
    result: "allowed",
  });
  const deny = (message: string): PodAdmission => ({
    status: 200,
    body: {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: request.uid, allowed: false, status: { code: 403, reason: "Forbidden", message } },
    },
    operation,
    result: "denied",
  });
  if (request.operation !== "CREATE") return allow();
  // A pod that arrived through a peering (its ShadowPod's) is the provider controller's to
  // place: offloading it again from here would chain it (and the webhook would refuse it while
  // this namespace's offloading is set up, blocking a peer's pod).
  if (isShadowPodControlled(request.object.metadata ?? {})) return allow();
  const ns = request.namespace ?? "";
  const nso = offloadingOf(ns);
  // Only namespaces labelled liqo.io/scheduling-enabled=true reach the webhook. Until their
  // offloading is set up a pod could land anywhere, so it is refused, as Liqo documents;
  // controllers (Deployments, Jobs) create it again moments later.
  if (!nso)
    return deny(
      `namespace ${ns} is labelled liqo.io/scheduling-enabled=true but is not offloaded: pods are refused until it is (liqoctl offload namespace ${ns}), or remove the label`,
    );
  if (nso.metadata.deletionTimestamp) return allow();
  if (!nso.status?.offloadingPhase)
    return deny(
      `the offloading of namespace ${ns} is being set up; pods are refused until its NamespaceOffloading has a phase (kubectl get namespaceoffloading -n ${ns})`,
    );
  const spec = request.object.spec ?? {};
  const strategy = nso.spec?.podOffloadingStrategy ?? "LocalAndRemote";
  const hostProblem = hostNamespacesProblem(spec, strategy, ns);
  if (hostProblem) return deny(hostProblem);
  const mutated = mutatePodSpec(spec, strategy, nso.spec?.clusterSelector?.nodeSelectorTerms ?? []);
  const patch = specPatch(spec, mutated);
  log.debug("pod mutated", {
    key: keyOf(request.namespace, request.object.metadata?.name ?? ""),
    strategy,
    ops: patch.length,
  });
  return allow(patch);
}

export interface PodWebhook {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

export async function startPodWebhook(o: {
  client: KubeClient;
  tls: { cert: string; key: string };
  host?: string;
  port?: number;
  logger?: Logger;
  /** Where the admission counters and latencies go (core/webhook/metrics.ts). */
  registry?: Registry;
}): Promise<PodWebhook> {
  const log = (o.logger ?? silentLogger).child({ component: "webhook" });
  const offloadings = createInformer<Offloading>({
    client: o.client,
    resource: NamespaceOffloadingResource,
    logger: log,
  });
  offloadings.start();
  await offloadings.waitForSync();

  const metrics = createAdmissionMetrics(o.registry, [{ webhook: POD_WEBHOOK_NAME, operation: "CREATE" }]);
  const server = Bun.serve({
    hostname: o.host ?? "127.0.0.1",
    port: o.port ?? 0,
    tls: { cert: Bun.file(o.tls.cert), key: Bun.file(o.tls.key) },
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/healthz") return new Response("ok");
      if (url.pathname !== POD_WEBHOOK_PATH)
        return Response.json(
          { message: `no webhook at ${url.pathname}; the pod webhook is ${POD_WEBHOOK_PATH}` },
          { status: 404 },
        );
      if (req.method !== "POST") return Response.json({ message: "admission reviews are POSTed" }, { status: 405 });
      const started = performance.now();
      let answer: PodAdmission;
      try {
        answer = reviewPodAdmission(
          await req.json().catch(() => NOT_JSON),
          (ns) => offloadings.get(keyOf(ns, DEFAULT_NAMESPACE_OFFLOADING_NAME)),
          log,
        );
      } catch (err) {
        log.error("admission review failed", { err });
        answer = { status: 500, body: { message: (err as Error).message }, operation: "unknown", result: "error" };
      }
      metrics.observe(POD_WEBHOOK_NAME, answer.operation, answer.result, (performance.now() - started) / 1000);
      return Response.json(answer.body, { status: answer.status });
    },
  });
  return {
    url: `https://${server.hostname}:${server.port}`,
    port: server.port!,
    async stop() {
      server.stop(true);
      await offloadings.stop();
    },
  };
}

/** Registers the webhook for pods in namespaces labelled for offloading. A down webhook blocks
 * pod creation there (Fail) rather than letting pods land where the strategy forbids. */
export async function registerPodWebhook(
  client: KubeClient,
  target: { url?: string; service?: { namespace: string; name: string; port: number }; caBundle: string },
  failurePolicy: "Fail" | "Ignore" = "Fail",
) {
  const clientConfig = target.url
    ? { url: `${target.url}${POD_WEBHOOK_PATH}`, caBundle: target.caBundle }
    : { service: { ...target.service!, path: POD_WEBHOOK_PATH }, caBundle: target.caBundle };
  await client.apply(
    MutatingWebhookConfigurations,
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: { name: "liqo-pod-mutator" },
      webhooks: [
        {
          name: POD_WEBHOOK_NAME,
          admissionReviewVersions: ["v1"],
          sideEffects: "None",
          failurePolicy,
          timeoutSeconds: 5,
          clientConfig,
          rules: [
            { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"], scope: "Namespaced" },
          ],
          namespaceSelector: { matchLabels: { [SCHEDULING_ENABLED_LABEL]: SCHEDULING_ENABLED_VALUE } },
        },
      ],
    } as KubeObject,
    { fieldManager: "liqo-webhook", force: true },
  );
}
