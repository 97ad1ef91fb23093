#!/usr/bin/env bash
# Everything a fresh machine needs, idempotent: Debian packages, npm dependencies (Bun included,
# pinned in package.json), the rig's Kubernetes binaries (built once into a cache) and the WASM plugins.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '[setup] %s\n' "$*" >&2; }

# 1. Debian packages.
mapfile -t wanted < <(grep -Ev '^\s*(#|$)' scripts/debian-packages.txt)
missing=()
for p in "${wanted[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  say "installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# 2. Go builds the rig's binaries; an older Go fetches the toolchain go.mod asks for.
if ! command -v go >/dev/null; then
  say "Go is not installed: install Go >= 1.24 (https://go.dev/doc/install), then rerun"; exit 1
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

# 3. npm dependencies, Bun among them.
if ! command -v npm >/dev/null; then say "npm is not installed: apt-get install nodejs npm, then rerun"; exit 1; fi
if [[ ! -x node_modules/.bin/bun ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  say "installing npm dependencies (bun $(sed -n 's/.*"bun": "\(.*\)".*/\1/p' package.json | head -1))"
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

# 4. The rig's binaries (a no-op once cached).
bash tests/rig/build.sh >/dev/null

# 5. The WASM reflectors and example plugins.
if [[ -f reflectors/build.ts ]]; then
  say "building WASM plugins"
  node_modules/.bin/bun run --silent build:wasm >&2
fi
# 6. actionlint, which checks .github/workflows (tests/e2e/github-workflows.test.ts), from its Go
#    module at the version tests/rig/versions.env pins, once into its own cache.
# shellcheck source=../tests/rig/versions.env
source tests/rig/versions.env
actionlint_dir=${XDG_CACHE_HOME:-$HOME/.cache}/liqo-bun/actionlint-${ACTIONLINT_VERSION}
if [[ ! -x "$actionlint_dir/actionlint" ]]; then
  say "building actionlint ${ACTIONLINT_VERSION} (go install)"
  mkdir -p "$actionlint_dir"
  GOBIN="$actionlint_dir" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
    "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}" >&2
fi
say "ready"
