{{/* Labels every object carries; app.kubernetes.io/part-of=liqo is how liqoctl finds liqo's objects. */}}
{{- define "liqo.labels" -}}
app.kubernetes.io/part-of: liqo
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component; call with (dict "root" $ "component" "auth"). */}}
{{- define "liqo.selector" -}}
app.kubernetes.io/name: liqo-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/* Labels of one component's objects. */}}
{{- define "liqo.componentLabels" -}}
{{ include "liqo.labels" .root }}
app.kubernetes.io/name: liqo-{{ .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
Labels of one component's Deployment or DaemonSet, as Liqo's chart has them: the workload named by
its role (app.kubernetes.io/name: controller-manager). Its pods keep app.kubernetes.io/name:
liqo-<role>: the selector matches it, and a Deployment's selector cannot change (helm upgrade from
an earlier version would fail). Liqo's other two differ from Helm's conventions and stay ours:
app.kubernetes.io/instance is the release name, app.kubernetes.io/component the role.
*/}}
{{- define "liqo.workloadLabels" -}}
{{ include "liqo.labels" .root }}
app.kubernetes.io/name: {{ .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "liqo.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The container every role runs in: the image's entrypoint is `bun cli/liqo.ts`, the role is the
first argument. No kubeconfig: in a pod the roles use the in-cluster configuration
(KUBERNETES_SERVICE_HOST/PORT and the mounted ServiceAccount token, re-read as the kubelet rotates it).
Call with (dict "root" $ "component" "auth" "args" (list ...) "adminPort" 8091 "resources" ... ["env" list] ["mounts" list] ["ports" list]
["netAdmin" true] ["privileged" true] ["readyz" "/readyz?exclude=leader"]).
The role's admin API listens on 127.0.0.1:<adminPort> (it refuses other addresses without TLS and
tokens), where the kubelet's httpGet probes cannot reach (they dial the pod IP). The probes use a
second listener on the pod IP, port "health" (adminPort + 100), that serves /healthz and /readyz
and nothing else. With metrics.enabled a third, port "metrics" (adminPort + 200), serves /metrics
over HTTPS to callers the API server authenticates and authorizes.
*/}}
{{- define "liqo.container" -}}
- name: {{ .component }}
  image: {{ include "liqo.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  {{- $health := add (int .adminPort) 100 }}
  {{- $metrics := add (int .adminPort) 200 }}
  args:
  {{- range .args }}
    - {{ . | quote }}
  {{- end }}
    - "--admin-address"
    - {{ printf "127.0.0.1:%d" (int .adminPort) | quote }}
    - "--health-address"
    - {{ printf "[$(POD_IP)]:%d" $health | quote }}
  {{- if .root.Values.metrics.enabled }}
    - "--metrics-address"
    - {{ printf "[$(POD_IP)]:%d" $metrics | quote }}
    - "--metrics-tls-cert-file"
    - "/etc/liqo/metrics-tls/tls.crt"
    - "--metrics-tls-key-file"
    - "/etc/liqo/metrics-tls/tls.key"
  {{- end }}
  {{- $ports := concat (.ports | default list) (list (dict "name" "health" "containerPort" $health "protocol" "TCP")) }}
  {{- if .root.Values.metrics.enabled }}
  {{- $ports = append $ports (dict "name" "metrics" "containerPort" $metrics "protocol" "TCP") }}
  {{- end }}
  ports:
  {{- toYaml $ports | nindent 4 }}
  env:
    - name: POD_IP
      valueFrom: { fieldRef: { fieldPath: status.podIP } }
    - name: POD_NAME
      valueFrom: { fieldRef: { fieldPath: metadata.name } }
    - name: POD_NAMESPACE
      valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
    - name: LIQO_LOG_LEVEL
      value: {{ ternary "debug" "info" .root.Values.debug | quote }}
  {{- with .env }}
  {{- toYaml . | nindent 4 }}
  {{- end }}
  readinessProbe:
    httpGet: { path: {{ .readyz | default "/readyz" | quote }}, port: health }
    periodSeconds: 5
    timeoutSeconds: 3
    failureThreshold: 3
  livenessProbe:
    httpGet: { path: /healthz, port: health }
    initialDelaySeconds: 30
    periodSeconds: 20
    timeoutSeconds: 5
    failureThreshold: 6
  {{- if .privileged }}
  # The gateway: wireguard-go opens /dev/net/tun (not in an unprivileged container's /dev), and
  # forwarding is turned on in the pod's network namespace (/proc/sys is read-only otherwise).
  # privileged gives both on any cluster that admits privileged pods, without kubelet settings
  # (an allowlisted unsafe sysctl) or host paths; /var/run/wireguard is an emptyDir.
  securityContext:
    privileged: true
    readOnlyRootFilesystem: true
    runAsUser: 0
  {{- else if .netAdmin }}
  # Tunnels, routes and nftables rules need NET_ADMIN (and root to open /dev/net/tun).
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    runAsUser: 0
    capabilities: { drop: [ALL], add: [NET_ADMIN, NET_RAW] }
  {{- else }}
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    runAsNonRoot: true
    runAsUser: 1000
    capabilities: { drop: [ALL] }
  {{- end }}
  {{- with .resources }}
  resources: {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- $mounts := .mounts | default list }}
  {{- if .root.Values.metrics.enabled }}
  {{- $mounts = append $mounts (dict "name" "metrics-tls" "mountPath" "/etc/liqo/metrics-tls" "readOnly" true) }}
  {{- end }}
  {{- with $mounts }}
  volumeMounts:
  {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* Pod-level fields shared by every Deployment: service account (its token is the roles' credential), pull secrets, volumes. */}}
{{- define "liqo.podSpec" -}}
serviceAccountName: liqo-{{ .component }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.pod.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
automountServiceAccountToken: true
{{- $volumes := .volumes | default list }}
{{- if .root.Values.metrics.enabled }}
{{- $volumes = append $volumes (dict "name" "metrics-tls" "secret" (dict "secretName" "liqo-metrics-tls")) }}
{{- end }}
{{- with $volumes }}
volumes:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end }}

{{- define "liqo.podMeta" -}}
labels:
  {{- include "liqo.selector" . | nindent 2 }}
  {{- /* As on Liqo's pods; not in the selector, so upgrades keep working. */}}
  app.kubernetes.io/component: {{ .component }}
  app.kubernetes.io/part-of: liqo
  {{- with .root.Values.pod.labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .root.Values.pod.annotations }}
annotations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Leader election flags of `liqo controller-manager` (a list of arguments, as YAML). */}}
{{- define "liqo.leaderElectionArgs" -}}
{{- $le := .Values.leaderElection -}}
- {{ printf "--leader-elect=%t" (and $le.enabled true) | quote }}
- {{ printf "--leader-elect-lease-duration=%ds" (int $le.leaseDurationSeconds) | quote }}
- {{ printf "--leader-elect-renew-deadline=%ds" (int $le.renewDeadlineSeconds) | quote }}
- {{ printf "--leader-elect-retry-period=%ds" (int $le.retryPeriodSeconds) | quote }}
{{- end }}

{{/*
The URL peers reach this cluster's auth service at, told to providers in our ResourceRequests:
auth.url, else https://<auth.ingress.host>, else (on upgrades) the liqo-auth Service's load
balancer address; empty when none is known yet (the first install of a LoadBalancer Service).
*/}}
{{- define "liqo.authUrl" -}}
{{- if .Values.auth.url -}}
{{ .Values.auth.url }}
{{- else if and .Values.auth.ingress.enabled .Values.auth.ingress.host -}}
https://{{ .Values.auth.ingress.host }}
{{- else -}}
{{- $svc := lookup "v1" "Service" .Release.Namespace "liqo-auth" -}}
{{- $lb := dig "status" "loadBalancer" "ingress" list $svc -}}
{{- if $lb -}}
{{- $first := first $lb -}}
https://{{ $first.hostname | default $first.ip }}:443
{{- end -}}
{{- end -}}
{{- end }}

{{/*
Replicas of a role's Deployment: its configured count, or 0 when roles.runInCluster is false (the
roles then run as processes outside the cluster; the Deployments stay, scaled to zero, so
`kubectl get deploy -n liqo` still lists every role). Call with (list $ .Values.auth.replicas).
*/}}
{{- define "liqo.replicas" -}}
{{- $root := index . 0 -}}
{{- ternary (index . 1) 0 $root.Values.roles.runInCluster -}}
{{- end }}
