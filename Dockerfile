# The liqo image: one program (`bun cli/liqo.ts`), the role as the first argument, as the chart runs it:
#   args: ["controller-manager", "--cluster-id", ...]
# Build from the repository root: docker build -t ghcr.io/liqo-bun/liqo:0.1.0 .
# (Not built in this repository's CI machine: it has no container engine; see docs/install.md.)
FROM oven/bun:1.4.5-debian AS build
WORKDIR /liqo
COPY package.json package-lock.json bunfig.toml tsconfig.json ./
RUN bun install --production=false --frozen-lockfile
COPY . .
# The built-in reflectors are AssemblyScript compiled to .wasm at build time; dev dependencies
# (assemblyscript) are only needed for that, so the runtime stage reinstalls production ones.
RUN bun reflectors/build.ts && rm -rf node_modules && bun install --production --frozen-lockfile

FROM oven/bun:1.4.5-debian
# The gateway and route roles program WireGuard, routes and nftables through the host tools.
RUN apt-get update \
 && apt-get install -y --no-install-recommends iproute2 nftables wireguard-tools ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /liqo
COPY --from=build /liqo /liqo
# The chart runs non-network roles as uid 1000 with a read-only root file system.
USER 1000
ENTRYPOINT ["bun", "cli/liqo.ts"]
