#!/usr/bin/env bash
# The main job: set-up, then Liqo's quick start on two local clusters (rome and milan).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
if [[ -f "${LIQO_RIG_DIR:-/tmp/liqo-rig}/rig.json" ]]; then
  echo "[quickstart] a rig from an earlier run exists; stopping it first" >&2
  node_modules/.bin/bun tests/rig/cli.ts down >&2
fi
exec node_modules/.bin/bun tests/quickstart/quickstart.ts "$@"
