#!/usr/bin/env bash
# The main job: set-up, then the quick start (for now: two local clusters, rome and milan, with kubectl access; peering and offloading land with their issues).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
exec node_modules/.bin/bun tests/rig/cli.ts up --clusters 2 --names rome,milan --nodes 2 "$@"
