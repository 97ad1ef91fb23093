#!/usr/bin/env bash
# Builds the rig's upstream binaries (Kubernetes control plane, kubelet, kube-proxy, kubectl, etcd,
# kwok, helm, CoreDNS)
# from their Go modules, once, into a cache outside the repo keyed by their versions.
# Prints the bin directory on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}_coredns-${COREDNS_VERSION}"
cache_root=${LIQO_RIG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liqo-bun/rig}
out="$cache_root/$key"
bin="$out/bin"
if [[ -f "$out/.complete" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache_root"
# One build at a time per cache: a second caller waits, then finds the cache complete.
exec 9>"$cache_root/.build.lock"
if ! flock -n 9; then
  echo "[rig build] another build of the rig's binaries is running; waiting for it" >&2
  flock 9
fi
if [[ -f "$out/.complete" ]]; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { echo "build.sh: Go is required to build the rig's binaries (apt-get install golang, or install Go >= 1.24)" >&2; exit 1; }
started=$(date +%s)
mkdir -p "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -trimpath" CGO_ENABLED=0
step() { printf '[rig build] %s\n' "$*" >&2; }

have() { [[ -x "$bin/$1" ]]; }

k8s_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
missing_k8s=0
for c in "${k8s_cmds[@]}"; do have "$c" || missing_k8s=1; done
if ((missing_k8s)); then
  step "Kubernetes ${K8S_VERSION}: ${k8s_cmds[*]} (one go build; 569 s cold on 2 cores, measured)"
  staging=${K8S_VERSION/v1./v0.}
  mkdir -p "$work/k8s" && cd "$work/k8s"
  {
    echo "module liqo-bun/rig/k8s"
    echo "go 1.24.0"
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    echo "replace ("
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
      cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
      cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms \
      kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
      mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller; do
      echo "  k8s.io/$m => k8s.io/$m $staging"
    done
    echo ")"
  } > go.mod
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=${K8S_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor} -X $p.gitTreeState=clean"
  done
  # Each package pinned @version: a bare 'go get pkg' would move k8s.io/kubernetes to its newest release.
  go get $(for c in "${k8s_cmds[@]}"; do printf 'k8s.io/kubernetes/cmd/%s@%s ' "$c" "$K8S_VERSION"; done) >&2
  go build -ldflags "$ld" -o "$bin/" $(for c in "${k8s_cmds[@]}"; do printf 'k8s.io/kubernetes/cmd/%s ' "$c"; done) >&2
fi

if ! have etcd; then
  step "etcd ${ETCD_VERSION} (a wrapper main around etcdmain)"
  mkdir -p "$work/etcd" && cd "$work/etcd"
  printf 'module liqo-bun/rig/etcd\n\ngo 1.24.0\n' > go.mod
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > main.go
  go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  go mod tidy >&2
  go build -ldflags "-s -w" -o "$bin/etcd" . >&2
fi

if ! have kwok; then
  step "kwok ${KWOK_VERSION}"
  GOBIN="$bin" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2
fi

if ! have helm; then
  step "helm ${HELM_VERSION}"
  GOBIN="$bin" go install -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
fi

# CoreDNS: the cluster DNS of rig clusters with real nodes (runs as pods from an image built here).
if ! have coredns; then
  step "CoreDNS ${COREDNS_VERSION}"
  GOBIN="$bin" go install -ldflags "-s -w" "github.com/coredns/coredns@${COREDNS_VERSION}" >&2
fi

echo $(( $(date +%s) - started )) > "$out/build-seconds"
touch "$out/.complete"
step "binaries ready in $bin"
echo "$bin"
