#!/usr/bin/env bash
# The test command: set-up, the linter, then every test (unit, real-cluster e2e, network namespaces).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh || exit 1
# Lint before any cluster starts: a lint error fails the run in seconds (biome.jsonc says what is checked).
if ! node_modules/.bin/bun run --silent lint; then
  echo "biome lint failed: fix the errors above (bun run lint)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
log=$(mktemp)
junit=$(mktemp)
trap 'rm -f "$log" "$junit"' EXIT
node_modules/.bin/bun test --timeout 600000 --reporter=junit --reporter-outfile="$junit" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The slowest files (CI has a time limit, and this is where the time goes), then each failure with its file and message:
# bun names a failed hook only "(unnamed)", and CI keeps the end of the log.
node_modules/.bin/bun scripts/test-report.ts "$junit" || true
pass=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+')
fail=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+')
echo "${pass:-0} passed, ${fail:-0} failed"
if [[ -z "$pass" || "$pass" == 0 ]]; then echo "no test ran" >&2; exit 1; fi
exit "$status"
