// A real Prometheus scraping liqo in-cluster, as a user without the Prometheus Operator would run
// one (docs/monitoring.md): the rig's Prometheus image (Debian's 2.42, tests/rig/images.ts) in a
// namespace of its own, configured with the plain equivalent of the chart's PodMonitor, and asked
// through its HTTP API. One difference from a user's: Debian builds Prometheus without
// kubernetes_sd_configs, so the pods come from file_sd_configs, written by the image's discovery
// script (images/prometheus-pod-sd.sh) with the pod role's own labels; the relabelling is the same. Helpers only; chart-incluster.test.ts runs them. Also: the PromQL of the
// Grafana dashboards in chart/dashboards, so a test can evaluate every panel.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { extraImageRefs } from "../rig/images.ts";
import { waitFor } from "../support/wait.ts";

export const MONITORING_NAMESPACE = "monitoring";
/** The scrape job that presents the Prometheus ServiceAccount's token. */
export const LIQO_JOB = "liqo";
/** The same targets scraped with no credentials at all: every scrape must be refused. */
export const ANONYMOUS_JOB = "liqo-no-credentials";
export const PROMETHEUS_PORT = 9090;

const FIELD_MANAGER = "liqo-e2e-prometheus";
const TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token";
const CA_DIR = "/etc/liqo-metrics-ca";
const SD_FILE = "/sd/pods.json";
// Not liqo-*: these are the user's objects, not the chart's (and uninstall --purge must not own them).
const POD_READER = "monitoring-prometheus-pods";
const METRICS_BINDING = "monitoring-prometheus-liqo-metrics";

/**
 * One scrape job over liqo's pods, what the chart's PodMonitor asks the Prometheus Operator for:
 * every pod labelled app.kubernetes.io/part-of=liqo, its container port named metrics, HTTPS checked
 * against the install's CA under the name liqo-metrics.<ns>.svc, and (with `token`) a bearer token.
 */
export function liqoScrapeJob(o: {
  job: string;
  liqoNamespace: string;
  token: boolean;
  /** kubernetes: as users write it; file: the discovery script's targets (the rig's Debian Prometheus). */
  discovery: "kubernetes" | "file";
}): Record<string, unknown> {
  return {
    job_name: o.job,
    scheme: "https",
    metrics_path: "/metrics",
    ...(o.discovery === "kubernetes"
      ? { kubernetes_sd_configs: [{ role: "pod", namespaces: { names: [o.liqoNamespace] } }] }
      : { file_sd_configs: [{ files: [SD_FILE], refresh_interval: "5s" }] }),
    // The Prometheus ServiceAccount's own token, the one the kubelet mounts and rotates (Prometheus
    // reads the file again at each scrape). Users run it this way: bind liqo-metrics-reader to the
    // ServiceAccount their Prometheus already runs as, rather than copying the liqo-metrics-scraper
    // Secret across namespaces (a long-lived token, and one more copy to revoke).
    ...(o.token ? { authorization: { type: "Bearer", credentials_file: TOKEN_FILE } } : {}),
    tls_config: { ca_file: `${CA_DIR}/ca.crt`, server_name: `liqo-metrics.${o.liqoNamespace}.svc` },
    relabel_configs: [
      { source_labels: ["__meta_kubernetes_pod_label_app_kubernetes_io_part_of"], regex: "liqo", action: "keep" },
      // The pod role makes one target per container port: only the metrics port is scraped.
      { source_labels: ["__meta_kubernetes_pod_container_port_name"], regex: "metrics", action: "keep" },
      { source_labels: ["__meta_kubernetes_pod_phase"], regex: "Succeeded|Failed", action: "drop" },
      // The target labels the Prometheus Operator gives a PodMonitor's series; the dashboards use pod.
      { source_labels: ["__meta_kubernetes_namespace"], target_label: "namespace" },
      { source_labels: ["__meta_kubernetes_pod_name"], target_label: "pod" },
      { source_labels: ["__meta_kubernetes_pod_container_name"], target_label: "container" },
    ],
  };
}

/** prometheus.yml: the liqo job every 5 s and, for the refusal check, the same targets without a token. */
export function prometheusConfig(liqoNamespace: string, discovery: "kubernetes" | "file" = "file"): string {
  return Bun.YAML.stringify(
    {
      global: { scrape_interval: "5s", scrape_timeout: "4s", evaluation_interval: "5s" },
      scrape_configs: [
        liqoScrapeJob({ job: LIQO_JOB, liqoNamespace, token: true, discovery }),
        liqoScrapeJob({ job: ANONYMOUS_JOB, liqoNamespace, token: false, discovery }),
      ],
    },
    null,
    2,
  );
}

export interface DeployPrometheusOptions {
  /** Where liqo is installed (default liqo). */
  liqoNamespace?: string;
  /** The node to run on (the rig's real node, where the image was imported). */
  nodeName?: string;
  namespace?: string;
  image?: string;
  timeoutMs?: number;
}

/**
 * Creates the monitoring namespace, Prometheus' ServiceAccount (pods in the liqo namespace readable
 * for discovery; liqo-metrics-reader bound for the scrapes), its configuration, the install's CA,
 * a Deployment and a Service; waits for the pod to be Ready and returns its name.
 */
export async function deployPrometheus(client: KubeClient, o: DeployPrometheusOptions = {}): Promise<string> {
  const ns = o.namespace ?? MONITORING_NAMESPACE;
  const liqoNs = o.liqoNamespace ?? "liqo";
  const apply = (res: ResourceRef, obj: Record<string, unknown>) =>
    client.apply(res, obj as KubeObject, { fieldManager: FIELD_MANAGER });
  const labels = { "app.kubernetes.io/name": "prometheus" };

  await apply(Resources.namespaces, { metadata: { name: ns } });
  await apply(Resources.serviceAccounts, { metadata: { name: "prometheus", namespace: ns } });
  const subjects = [{ kind: "ServiceAccount", name: "prometheus", namespace: ns }];
  // Discovery reads pods in liqo's namespace only: a ClusterRole granted there by a RoleBinding (what
  // kubernetes_sd_configs needs, and the discovery script, which lists with the same token).
  await apply(Resources.clusterRoles, {
    metadata: { name: POD_READER },
    rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] }],
  });
  await apply(Resources.roleBindings, {
    metadata: { name: POD_READER, namespace: liqoNs },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: POD_READER },
    subjects,
  });
  await apply(Resources.clusterRoleBindings, {
    metadata: { name: METRICS_BINDING },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "liqo-metrics-reader" },
    subjects,
  });

  // The CA is public: a ConfigMap holds the copy (the Secret also carries the serving key).
  const tls = await client.get<KubeObject & { data?: Record<string, string> }>(
    Resources.secrets,
    "liqo-metrics-tls",
    liqoNs,
  );
  const ca = tls.data?.["ca.crt"];
  if (!ca) throw new Error(`Secret ${liqoNs}/liqo-metrics-tls has no ca.crt: is liqo installed with --enable-metrics?`);
  await apply(Resources.configMaps, {
    metadata: { name: "liqo-metrics-ca", namespace: ns },
    data: { "ca.crt": Buffer.from(ca, "base64").toString() },
  });
  await apply(Resources.configMaps, {
    metadata: { name: "prometheus-config", namespace: ns },
    data: { "prometheus.yml": prometheusConfig(liqoNs) },
  });

  await apply(Resources.deployments, {
    metadata: { name: "prometheus", namespace: ns, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      // One TSDB on an emptyDir: a rolling update would start the new pod beside the old one.
      strategy: { type: "Recreate" },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: "prometheus",
          ...(o.nodeName ? { nodeSelector: { "kubernetes.io/hostname": o.nodeName } } : {}),
          securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, fsGroup: 65534 },
          containers: [
            {
              name: "prometheus",
              image: o.image ?? extraImageRefs.prometheus,
              imagePullPolicy: "IfNotPresent",
              args: [
                "--config.file=/etc/prometheus/prometheus.yml",
                "--storage.tsdb.path=/prometheus",
                "--storage.tsdb.retention.time=2h",
                `--web.listen-address=:${PROMETHEUS_PORT}`,
              ],
              ports: [{ name: "web", containerPort: PROMETHEUS_PORT, protocol: "TCP" }],
              readinessProbe: { httpGet: { path: "/-/ready", port: "web" }, periodSeconds: 2 },
              livenessProbe: {
                httpGet: { path: "/-/healthy", port: "web" },
                initialDelaySeconds: 30,
                periodSeconds: 15,
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
              resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { memory: "512Mi" } },
              volumeMounts: [
                { name: "config", mountPath: "/etc/prometheus", readOnly: true },
                { name: "liqo-metrics-ca", mountPath: CA_DIR, readOnly: true },
                { name: "data", mountPath: "/prometheus" },
                { name: "sd", mountPath: "/sd", readOnly: true },
              ],
            },
            {
              // kubernetes_sd_configs' stand-in (see the top of this file): pod targets into /sd.
              name: "pod-discovery",
              image: o.image ?? extraImageRefs.prometheus,
              imagePullPolicy: "IfNotPresent",
              command: ["/usr/local/bin/prometheus-pod-sd"],
              env: [
                { name: "SD_NAMESPACES", value: liqoNs },
                { name: "SD_FILE", value: SD_FILE },
                { name: "SD_INTERVAL", value: "5" },
              ],
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
              resources: { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } },
              volumeMounts: [{ name: "sd", mountPath: "/sd" }],
            },
          ],
          volumes: [
            { name: "config", configMap: { name: "prometheus-config" } },
            { name: "liqo-metrics-ca", configMap: { name: "liqo-metrics-ca" } },
            { name: "data", emptyDir: {} },
            { name: "sd", emptyDir: {} },
          ],
        },
      },
    },
  });
  await apply(Resources.services, {
    metadata: { name: "prometheus", namespace: ns, labels },
    spec: { selector: labels, ports: [{ name: "web", port: PROMETHEUS_PORT, targetPort: "web", protocol: "TCP" }] },
  });

  type Pod = KubeObject & { status?: { phase?: string; conditions?: { type: string; status: string }[] } };
  const pods = async () =>
    (await client.list<Pod>(Resources.pods, { namespace: ns, labelSelector: "app.kubernetes.io/name=prometheus" }))
      .items;
  const pod = await waitFor(
    "the Prometheus pod Ready",
    async () =>
      (await pods()).find(
        (p) =>
          !p.metadata.deletionTimestamp &&
          p.status?.phase === "Running" &&
          p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      ),
    {
      timeoutMs: o.timeoutMs ?? 180_000,
      intervalMs: 1000,
      describe: async () => (await pods()).map((p) => ({ pod: p.metadata.name, status: p.status })),
    },
  );
  return pod.metadata.name!;
}

/** Removes what deployPrometheus made, the namespace last; waits until the namespace is gone. */
export async function removePrometheus(
  client: KubeClient,
  o: { liqoNamespace?: string; namespace?: string; timeoutMs?: number } = {},
): Promise<void> {
  const ns = o.namespace ?? MONITORING_NAMESPACE;
  await client.delete(Resources.clusterRoleBindings, METRICS_BINDING);
  await client.delete(Resources.roleBindings, POD_READER, o.liqoNamespace ?? "liqo");
  await client.delete(Resources.clusterRoles, POD_READER);
  await client.delete(Resources.namespaces, ns);
  await waitFor(
    "the monitoring namespace gone",
    async () => (await client.find(Resources.namespaces, ns)) === undefined,
    {
      timeoutMs: o.timeoutMs ?? 120_000,
      intervalMs: 500,
    },
  );
}

// Prometheus' API, reached through the API server's service proxy: the rig's API server dials pod
// addresses directly (hostRouting; a Service's endpoints, as for webhooks), so no port-forward or exec.
const apiPath = (ns: string, path: string) =>
  `/api/v1/namespaces/${ns}/services/prometheus:${PROMETHEUS_PORT}/proxy/api/v1/${path}`;

async function prometheusApi<T>(
  client: KubeClient,
  path: string,
  query: Record<string, string>,
  namespace: string,
): Promise<T> {
  const answer = JSON.parse(await client.text(apiPath(namespace, path), { query, timeoutMs: 15_000 })) as {
    status: string;
    data?: T;
    errorType?: string;
    error?: string;
  };
  if (answer.status !== "success")
    throw new Error(`Prometheus /api/v1/${path}: ${answer.errorType ?? "error"}: ${answer.error ?? "no data"}`);
  return answer.data as T;
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** A PromQL instant query (/api/v1/query); the vector's samples (a scalar answers as one sample). */
export async function queryPrometheus(
  client: KubeClient,
  expr: string,
  namespace = MONITORING_NAMESPACE,
): Promise<PromSample[]> {
  const data = await prometheusApi<{ resultType: string; result: PromSample[] | [number, string] }>(
    client,
    "query",
    { query: expr },
    namespace,
  );
  if (data.resultType === "scalar" || data.resultType === "string")
    return [{ metric: {}, value: data.result as [number, string] }];
  return data.result as PromSample[];
}

export interface PromTarget {
  labels: Record<string, string>;
  scrapePool: string;
  scrapeUrl: string;
  health: "up" | "down" | "unknown";
  lastError: string;
}

/** The active targets (/api/v1/targets), with each one's health and last scrape error. */
export async function prometheusTargets(client: KubeClient, namespace = MONITORING_NAMESPACE): Promise<PromTarget[]> {
  return (await prometheusApi<{ activeTargets: PromTarget[] }>(client, "targets", { state: "active" }, namespace))
    .activeTargets;
}

/** Metric names the scraped targets declared (# TYPE lines), samples or not (/api/v1/metadata). */
export async function prometheusMetadata(client: KubeClient, namespace = MONITORING_NAMESPACE): Promise<Set<string>> {
  return new Set(Object.keys(await prometheusApi<Record<string, unknown>>(client, "metadata", {}, namespace)));
}

/** A panel's description says this when its series exist only while a peering does (see docs/monitoring.md). */
export const NEEDS_PEERING = "Shows data once a peering exists";

export interface DashboardQuery {
  file: string;
  dashboard: string;
  panel: string;
  refId: string;
  /** The panel's PromQL with the Grafana variables replaced by the values a test can evaluate. */
  expr: string;
  needsPeering: boolean;
}

interface Panel {
  title?: string;
  description?: string;
  targets?: { expr?: string; refId?: string }[];
  panels?: Panel[];
}

// Grafana's interval variables become a fixed window wider than a few 5 s scrapes; the dashboards'
// own variables take their defaults.
const VARIABLES: Record<string, string> = {
  __rate_interval: "1m",
  __interval: "1m",
  __range: "1m",
  namespace: "liqo",
};

export function substituteVariables(expr: string, values: Record<string, string> = VARIABLES): string {
  // $1 in label_replace's replacement is PromQL's, not Grafana's: variables start with a letter or _.
  return expr.replace(
    /\$\{([a-zA-Z_]\w*)(?::\w+)?\}|\$([a-zA-Z_]\w*)/g,
    (whole, braced: string | undefined, bare: string | undefined) => {
      const value = values[(braced ?? bare)!];
      if (value === undefined) throw new Error(`unknown Grafana variable ${whole} in ${JSON.stringify(expr)}`);
      return value;
    },
  );
}

/** Every panel's targets[].expr of every dashboard in `dir` (rows' nested panels too). */
export function dashboardQueries(dir: string): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const d = JSON.parse(readFileSync(join(dir, file), "utf8")) as { title: string; panels?: Panel[] };
    const walk = (panels: Panel[]) => {
      for (const p of panels) {
        for (const t of p.targets ?? []) {
          if (!t.expr) continue;
          out.push({
            file,
            dashboard: d.title,
            panel: p.title ?? "",
            refId: t.refId ?? "",
            expr: substituteVariables(t.expr),
            needsPeering: (p.description ?? "").includes(NEEDS_PEERING),
          });
        }
        if (p.panels) walk(p.panels);
      }
    };
    walk(d.panels ?? []);
  }
  return out;
}

/** The metric names a PromQL expression reads (what is neither a function, a keyword nor a label). */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values, label_replace's arguments
    .replace(/\{[^}]*\}/g, "{}") // matchers
    .replace(/\[[^\]]*\]/g, "[]") // ranges
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " "); // label lists
  // \b on both sides: a function's name is not read as a shorter metric name before its "(".
  const names = bare.match(/\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()/g) ?? [];
  const keywords = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan"]);
  return [...new Set(names.filter((n) => !keywords.has(n.toLowerCase())))];
}

/**
 * The metric names the code registers: every `name: "..."` string of core/ and netfabric/ (tests
 * aside) that looks like a metric name. Loose on purpose: it proves a dashboard does not read a name
 * nothing declares; the live check (series returned) does the rest.
 */
export function registeredMetricNames(repo: string): Set<string> {
  const out = new Set<string>(["up"]);
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts"))
        for (const m of readFileSync(path, "utf8").matchAll(/\bname: "([a-z_:][a-z0-9_:]*_[a-z0-9_:]+)"/g))
          out.add(m[1]!);
    }
  };
  for (const top of ["core", "netfabric"]) walk(join(repo, top));
  return out;
}

/** A name a query reads, as declared: a histogram's _bucket, _sum and _count series are its own. */
export const declaredName = (name: string) => name.replace(/_(bucket|sum|count)$/, "");
