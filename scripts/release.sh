#!/usr/bin/env bash
# Builds a release into dist/release-VERSION/: liqoctl for linux and darwin (amd64, arm64), the
# multi-arch image as an OCI archive, the Helm chart, SHA256SUMS. The work is scripts/release.ts's;
# docs/release.md says how to cut a release and what is in it.
#   usage: bash scripts/release.sh VERSION [--out DIR] [--allow-dirty]
# Needs root (debootstrap builds the image's Debian layers, cached under ~/.cache/liqo-bun/image),
# Go, helm, and for the arm64 image qemu-user-static (scripts/setup.sh installs what is missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ! -x "$root/node_modules/.bin/bun" ]]; then
  echo "release: node_modules/.bin/bun is missing: run bash scripts/setup.sh (or npm ci) first" >&2
  exit 1
fi
exec "$root/node_modules/.bin/bun" "$root/scripts/release.ts" "$@"
