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
import { hostNamespacesProblem, mutatePodSpec, specPatch, type PodOffloadingStrategy } from "./pods.ts";

export const MutatingWebhookConfigurations: ResourceRef = {
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "MutatingWebhookConfiguration",
  plural: "mutatingwebhookconfigurations",
  namespaced: false,
};
export const POD_WEBHOOK_PATH = "/mutate/pods";

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

type Offloading = KubeObject & {
  spec?: { podOffloadingStrategy?: PodOffloadingStrategy; clusterSelector?: { nodeSelectorTerms?: SelectorTerm[] } };
  status?: { offloadingPhase?: string };
};

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
}): Promise<PodWebhook> {
  const log = (o.logger ?? silentLogger).child({ component: "webhook" });
  const offloadings = createInformer<Offloading>({
    client: o.client,
    resource: NamespaceOffloadingResource,
    logger: log,
  });
  offloadings.start();
  await offloadings.waitForSync();

  const problem = (status: number, message: string) => Response.json({ message }, { status });
  const server = Bun.serve({
    hostname: o.host ?? "127.0.0.1",
    port: o.port ?? 0,
    tls: { cert: Bun.file(o.tls.cert), key: Bun.file(o.tls.key) },
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/healthz") return new Response("ok");
      if (url.pathname !== POD_WEBHOOK_PATH)
        return problem(404, `no webhook at ${url.pathname}; the pod webhook is ${POD_WEBHOOK_PATH}`);
      if (req.method !== "POST") return problem(405, "admission reviews are POSTed");
      let body: unknown;
      try {
        body = await req.json();
      } catch {
        return problem(400, "the body is not JSON; expected an admission.k8s.io/v1 AdmissionReview");
      }
      const parsed = v.safeParse(AdmissionReview, body);
      if (!parsed.success) return problem(400, `not a valid AdmissionReview: ${parsed.issues[0].message}`);
      const { request } = parsed.output;
      const allow = (patch?: unknown[]) =>
        Response.json({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          response: {
            uid: request.uid,
            allowed: true,
            ...(patch?.length
              ? { patchType: "JSONPatch", patch: Buffer.from(JSON.stringify(patch)).toString("base64") }
              : {}),
          },
        });
      const deny = (message: string) =>
        Response.json({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          response: { uid: request.uid, allowed: false, status: { code: 403, reason: "Forbidden", message } },
        });
      if (request.operation !== "CREATE") return allow();
      // A pod that arrived through a peering (its ShadowPod's) is the provider controller's to
      // place: offloading it again from here would chain it (and the webhook would refuse it while
      // this namespace's offloading is set up, blocking a peer's pod).
      if (isShadowPodControlled(request.object.metadata ?? {})) return allow();
      const ns = request.namespace ?? "";
      const nso = offloadings.get(keyOf(ns, DEFAULT_NAMESPACE_OFFLOADING_NAME));
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
          name: "pod.mutate.liqo.io",
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
