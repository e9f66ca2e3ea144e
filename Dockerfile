# syntax=docker/dockerfile:1
#
# One image, three programs: svc-auth, svc-operator and svc (alias kubectl-svc). No ENTRYPOINT: the Helm
# chart sets `command` per component. Runs as uid 65532, with a read-only root filesystem in the chart.
#
#   docker build -t svc-access-control:dev .
#   docker run --rm svc-access-control:dev svc --help
#
# Node 24 is an LTS line; the package itself needs Node >= 20.19. NODE_IMAGE is what the image runs on;
# BUILD_IMAGE (default: the same) is what `npm ci` and tsc run in, and must have npm. Where no image registry is
# reachable, `npm run image:build` passes Debian-assembled bases for both (test/image/build.ts).
ARG NODE_IMAGE=node:24-bookworm-slim
ARG BUILD_IMAGE=${NODE_IMAGE}

# --- build: every dependency, then tsc into dist/ --------------------------------------------------
FROM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the package's `prepare` (tsc) would run before the sources are here; we build below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY lib ./lib
COPY core ./core
COPY k8s ./k8s
COPY operator ./operator
COPY authz ./authz
COPY cli ./cli
RUN npm run build

# --- deps: production dependencies only -------------------------------------------------------------
FROM ${BUILD_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime -------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
# package.json is needed at run time: it makes dist/ ESM ("type": "module"). (--version is compiled in: lib/version.ts.)
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY crds ./crds
# The bins on PATH, as npm would link them (package.json "bin"): symlinks to the dist entry points,
# which start with `#!/usr/bin/env node`. `kubectl-svc` keeps its name, so the CLI shows itself as
# `kubectl svc`. npm and the other package managers are not needed at run time, so they go.
RUN set -eu; \
    for bin in svc-auth:authz svc-operator:operator svc:cli kubectl-svc:cli; do \
      name="${bin%%:*}"; main="/app/dist/${bin#*:}/main.js"; \
      test "$(head -c 2 "$main")" = '#!'; \
      chmod 0755 "$main"; \
      ln -s "$main" "/usr/local/bin/${name}"; \
    done; \
    rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg \
           /opt/yarn-*
USER 65532:65532
EXPOSE 8080 9090
CMD ["svc", "--help"]
