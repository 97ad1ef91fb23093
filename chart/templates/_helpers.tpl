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
Call with (dict "root" $ "component" "auth" "args" (list ...) "adminPort" 8091 "resources" ... ["env" list] ["mounts" list]
["netAdmin" true] ["privileged" true] ["readyz" "/readyz?exclude=leader"]).
The role's admin API listens on 127.0.0.1:<adminPort> (it refuses other addresses without TLS and
tokens), where the kubelet's httpGet probes cannot reach (they dial the pod IP): the probes run
bash in the container and speak HTTP to the loopback port (no curl in the image, no extra Bun).
*/}}
{{- define "liqo.container" -}}
- name: {{ .component }}
  image: {{ include "liqo.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  args:
  {{- range .args }}
    - {{ . | quote }}
  {{- end }}
    - "--admin-address"
    - {{ printf "127.0.0.1:%d" (int .adminPort) | quote }}
  env:
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
    exec: { command: {{ include "liqo.httpProbe" (list .adminPort (.readyz | default "/readyz")) }} }
    periodSeconds: 5
    timeoutSeconds: 3
    failureThreshold: 3
  livenessProbe:
    exec: { command: {{ include "liqo.httpProbe" (list .adminPort "/healthz") }} }
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
  {{- with .mounts }}
  volumeMounts:
  {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* Pod-level fields shared by every Deployment: service account (its token is the roles' credential), pull secrets, volumes. */}}
{{/*
An exec probe command (JSON list) that GETs a path of the admin API on 127.0.0.1:<port> and succeeds
on HTTP 200; call with (list port path).
*/}}
{{- define "liqo.httpProbe" -}}
{{- $port := int (index . 0) -}}
{{- $path := index . 1 -}}
{{- $script := printf "exec 3<>/dev/tcp/127.0.0.1/%d && printf 'GET %s HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && read -r _ code _ <&3 && [ \"$code\" = 200 ]" $port $path -}}
{{- list "bash" "-c" $script | toJson -}}
{{- end }}

{{- define "liqo.podSpec" -}}
serviceAccountName: liqo-{{ .component }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.pod.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
automountServiceAccountToken: true
{{- with .volumes }}
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
