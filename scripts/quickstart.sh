#!/usr/bin/env bash
# The main job: set-up, then Liqo's quick start on two local clusters with real nodes (rome and
# milan): liqo installed in-cluster on both, peered with networking, liqo-demo offloaded, and a pod
# in rome curling nginx-remote in milan through liqo's gateways. The developers' variant with
# liqo's roles as local processes on kwok nodes: node_modules/.bin/bun tests/quickstart/quickstart.ts
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
if [[ -f "${LIQO_RIG_DIR:-/tmp/liqo-rig}/rig.json" ]]; then
  echo "[quickstart] a rig from an earlier run exists; stopping it first" >&2
  node_modules/.bin/bun tests/rig/cli.ts down >&2
fi
exec node_modules/.bin/bun tests/quickstart/in-cluster.ts "$@"
