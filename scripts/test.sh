#!/usr/bin/env bash
# The test command: set-up, the linter, then every test (unit, real-cluster e2e, network namespaces).
# The files run in LIQO_TEST_SHARDS (default 3) bun test processes side by side, balanced by the
# times in tests/durations.json: the in-cluster files wait on clusters much of the time, so several
# at once beat one after the other even on 2 cores (the measured times: docs/ARCHITECTURE.md, "Tests and
# benchmarks").
# Arguments (file filters) run one bun test process over them, as `bun test` would.
# LIQO_SAVE_DURATIONS=1 rewrites tests/durations.json with this run's times.
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
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
shards=${LIQO_TEST_SHARDS:-3}
if [[ ! "$shards" =~ ^[1-9][0-9]*$ ]]; then
  echo "LIQO_TEST_SHARDS must be a whole number ≥ 1, got '$shards'" >&2
  exit 2
fi
if [[ $# -gt 0 || "$shards" == 1 ]]; then
  node_modules/.bin/bun test --timeout 600000 --reporter=junit --reporter-outfile="$work/junit-1.xml" "$@" 2>&1 |
    tee "$work/log-1"
  status=${PIPESTATUS[0]}
  shards=1
else
  node_modules/.bin/bun scripts/test-plan.ts "$shards" "$work" || exit 1
  pids=()
  for i in $(seq 1 "$shards"); do
    # Each shard's output streams live, its lines marked [i]; its own log is kept for the counts.
    (
      mapfile -t files <"$work/shard-$i.txt"
      node_modules/.bin/bun test --timeout 600000 --reporter=junit --reporter-outfile="$work/junit-$i.xml" "${files[@]}" \
        >"$work/log-$i" 2>&1
      echo $? >"$work/status-$i"
    ) &
    pids+=($!)
    tail -n +1 -F "$work/log-$i" 2>/dev/null | sed -u "s/^/[$i] /" &
  done
  wait "${pids[@]}"
  sleep 1
  jobs -p | xargs -r kill 2>/dev/null
  status=0
  for i in $(seq 1 "$shards"); do
    s=$(cat "$work/status-$i" 2>/dev/null || echo 1)
    [[ "$s" == 0 ]] || status=$s
  done
fi
took=$(($(date +%s) - started))
# The slowest files (CI has a time limit, and this is where the time goes), then each failure with its file and message:
# bun names a failed hook only "(unnamed)", and CI keeps the end of the log.
save=()
[[ "${LIQO_SAVE_DURATIONS:-}" == 1 ]] && save=(--durations "$root/tests/durations.json")
node_modules/.bin/bun scripts/test-report.ts "$work"/junit-*.xml "${save[@]}" || true
pass=0
fail=0
ran=0
for log in "$work"/log-*; do
  p=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+')
  f=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+')
  [[ -n "$p" ]] && ran=1
  pass=$((pass + ${p:-0}))
  fail=$((fail + ${f:-0}))
done
echo "the suite took $((took / 60)) min $((took % 60)) s ($shards bun test process(es) side by side)"
echo "$pass passed, $fail failed"
if [[ "$ran" == 0 || "$pass" == 0 ]]; then echo "no test ran" >&2; exit 1; fi
exit "$status"
