# The liqo image: one program (`bun cli/liqo.ts`), the role as the first argument, as the chart runs it:
#   args: ["controller-manager", "--cluster-id", ...]
# Build from the repository root: docker build -t ghcr.io/liqo-bun/liqo:0.2.0-dev .
# (Not built with docker on this repository's CI machine: it has no container engine; see docs/install.md.
#  tests/e2e/dockerfile.test.ts checks that what it copies exists and its versions match package.json.
#  `bun run build:image` (scripts/build-image.ts) builds the same image as an OCI archive from Debian
#  packages; it reads the runtime stage's apt-get packages, ENTRYPOINT, USER and WORKDIR from here.)
#
# Dependencies are locked in package-lock.json and installed with `npm ci`, as scripts/setup.sh
# does; Bun itself is one of them (devDependencies.bun), which builds the reflectors here.
FROM node:20-bookworm-slim AS build
WORKDIR /liqo
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY . .
# The built-in reflectors are AssemblyScript compiled to .wasm at build time; dev dependencies
# (assemblyscript, bun) are only needed for that, so they are pruned before the runtime stage.
RUN node_modules/.bin/bun reflectors/build.ts && npm prune --omit=dev --no-audit --no-fund

# wireguard-go from its Go module at a pinned version: Debian bookworm's package (0.0.20220316)
# predates the UDP/TUN segmentation offloads and the larger socket buffers, and overflows its
# receive buffer under load (the fabric 3-7x slower on the rig; docs/network-fabric.md, "Throughput").
FROM golang:1.24-bookworm AS wireguard-go
RUN CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" golang.zx2c4.com/wireguard@v0.0.0-20260522210424-ecfc5a8d5446

# The runtime: the same Bun version as devDependencies.bun.
FROM oven/bun:1.4.5-debian
# The gateway and route roles program WireGuard, routes and nftables through the host tools;
# wireguard-go is the gateway's device where the kernel has no WireGuard module, procps gives it
# sysctl (net.ipv4.ip_forward) and iputils-ping its latency probe through the tunnel. curl and
# netcat-openbsd are the probes of `liqoctl test network`, whose pods run this image (`liqo test-server`).
RUN apt-get update \
 && apt-get install -y --no-install-recommends iproute2 nftables wireguard-tools wireguard-go procps iputils-ping ca-certificates curl netcat-openbsd \
 && rm -rf /var/lib/apt/lists/*
# Ahead of Debian's /usr/bin/wireguard-go on PATH.
COPY --from=wireguard-go /go/bin/wireguard /usr/local/bin/wireguard-go
WORKDIR /liqo
COPY --from=build /liqo /liqo
# The chart runs non-network roles as uid 1000 with a read-only root file system; in a pod the
# roles use the in-cluster configuration (the mounted ServiceAccount), no kubeconfig.
USER 1000
ENTRYPOINT ["bun", "cli/liqo.ts"]
