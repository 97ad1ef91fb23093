#!/usr/bin/env bash
# The test command: set-up, then every test (unit, real-cluster e2e, network namespaces).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
node_modules/.bin/bun test --timeout 600000 "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
pass=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+')
fail=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+')
echo "${pass:-0} passed, ${fail:-0} failed"
if [[ -z "$pass" || "$pass" == 0 ]]; then echo "no test ran" >&2; exit 1; fi
exit "$status"
