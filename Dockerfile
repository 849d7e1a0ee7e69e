# syntax=docker/dockerfile:1
# One image for every role: ROLE=api, ROLE=worker (or ROLE=all) picks what `workers/serve.ts`
# runs; `node --import tsx workers/migrate.ts` applies the migrations (the Kubernetes Job and the
# compose file's migrate service). docs/operations.md, "Deploying", says how it is used.
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: every dependency, the generated Prisma client, the studio's bundle ----------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The sources come in before `npm ci`: the root package's prepare script builds the CLI workspace.
COPY . .
# onnxruntime-node's CPU binary is in its package; its install script would fetch CUDA libraries.
RUN ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund
RUN PRISMA_SCHEMA_ENGINE_BINARY=/bin/true node_modules/.bin/prisma generate >/dev/null
RUN npm run -s build -w services/studio
# Development packages out; node_modules/.svc-prisma (the generated client) stays.
RUN npm prune --omit=dev --no-audit --no-fund
# onnxruntime-node carries its binaries for Windows and macOS too (about 220 MB): only Linux's stay.
RUN find node_modules/onnxruntime-node/bin/napi-v6 -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} +

# --- runtime: node, tini and the local tool nodes' programs; no compilers, no npm cache -------
FROM ${NODE_IMAGE} AS runtime
# The media programs (speech, OCR, audio, video nodes) are optional: build with
# --build-arg MEDIA_PACKAGES= for a smaller image whose catalog leaves those nodes out.
ARG MEDIA_PACKAGES="ffmpeg espeak-ng tesseract-ocr tesseract-ocr-eng"
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ${MEDIA_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
# A numeric, non-root user (10001), so that Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 svc \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin svc
WORKDIR /app
# Owned by root and not writable by the service: it writes only to /tmp (tsx's cache, tool nodes).
COPY --from=build /app/package.json /app/tsconfig.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/services ./services
COPY --from=build /app/workers ./workers
COPY --from=build /app/prisma ./prisma
COPY --from=build /app/catalog ./catalog
# A container must listen on every interface (the service's own default is loopback).
ENV HOST=0.0.0.0 PORT=8080 METRICS_PORT=9464 DATA_DIR=/tmp/svc
USER 10001:10001
EXPOSE 8080 9464
# A worker answers /healthz on METRICS_PORT, every other role on PORT.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const e=process.env,p=e.ROLE==='worker'?(e.METRICS_PORT||9464):(e.PORT||8080);require('http').get({host:'127.0.0.1',port:p,path:'/healthz',timeout:3000},(r)=>process.exit(r.statusCode===200?0:1)).on('timeout',()=>process.exit(1)).on('error',()=>process.exit(1))"]
# tini is PID 1: it passes SIGTERM on to node (which drains, docs/operations.md) and reaps the
# tool nodes' child processes.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--import", "tsx", "workers/serve.ts"]
