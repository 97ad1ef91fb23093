#!/bin/sh
# Pod discovery for the rig's Prometheus. Debian builds Prometheus without kubernetes_sd_configs (the
# package dropped it for client-go's dependencies), so this loop stands in for `role: pod`: it lists
# the pods of SD_NAMESPACES with the pod's ServiceAccount token and writes a file_sd target file, one
# target per container port, labelled as Prometheus' pod role labels them (__meta_kubernetes_pod_*).
# A scrape job's relabel_configs are then the ones a kubernetes_sd_configs job would use.
#   SD_NAMESPACES  comma-separated namespaces (required)
#   SD_FILE        the target file (default /sd/pods.json), written whole and renamed in
#   SD_INTERVAL    seconds between lists (default 5)
set -eu

: "${SD_NAMESPACES:?set SD_NAMESPACES to the namespaces whose pods to discover}"
out="${SD_FILE:-/sd/pods.json}"
interval="${SD_INTERVAL:-5}"
sa=/var/run/secrets/kubernetes.io/serviceaccount
host="$KUBERNETES_SERVICE_HOST"
case "$host" in *:*) host="[$host]" ;; esac
api="https://$host:$KUBERNETES_SERVICE_PORT"

# Label names as Prometheus sanitizes them: anything but [a-zA-Z0-9_] becomes _.
targets='
def name: gsub("[^a-zA-Z0-9_]"; "_");
def addr($ip; $port): (if ($ip | contains(":")) then "[\($ip)]" else $ip end) + ":" + ($port | tostring);
[ .[].items[] as $p
  | select($p.status.podIP != null)
  | ($p.metadata.labels // {} | with_entries(.key = "__meta_kubernetes_pod_label_" + (.key | name))) as $labels
  | $p.spec.containers[] as $c
  | ($c.ports // [])[] as $port
  | { targets: [addr($p.status.podIP; $port.containerPort)],
      labels: ({
        __meta_kubernetes_namespace: $p.metadata.namespace,
        __meta_kubernetes_pod_name: $p.metadata.name,
        __meta_kubernetes_pod_ip: $p.status.podIP,
        __meta_kubernetes_pod_phase: ($p.status.phase // ""),
        __meta_kubernetes_pod_node_name: ($p.spec.nodeName // ""),
        __meta_kubernetes_pod_container_name: $c.name,
        __meta_kubernetes_pod_container_port_name: ($port.name // ""),
        __meta_kubernetes_pod_container_port_number: ($port.containerPort | tostring),
        __meta_kubernetes_pod_container_port_protocol: ($port.protocol // "TCP")
      } + $labels) } ]'

mkdir -p "$(dirname "$out")"
echo "pod discovery: namespaces $SD_NAMESPACES every ${interval}s into $out"
last=""
while :; do
  # A failed list keeps the previous file: targets do not vanish while the API server is away.
  if lists="$(for ns in $(echo "$SD_NAMESPACES" | tr ',' ' '); do
    curl -sS --fail --max-time 10 --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" \
      "$api/api/v1/namespaces/$ns/pods"
  done)" && groups="$(printf '%s\n' "$lists" | jq -s "$targets")"; then
    if [ "$groups" != "$last" ]; then
      printf '%s\n' "$groups" >"$out.tmp" && mv "$out.tmp" "$out"
      echo "pod discovery: $(printf '%s' "$groups" | jq length) targets"
      last="$groups"
    fi
  else
    echo "pod discovery: listing pods failed; keeping $out" >&2
  fi
  sleep "$interval"
done
