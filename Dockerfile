# syntax=docker/dockerfile:1
#
# The mod REST server with the weights of one preset inside, so the container runs offline.
#   docker build -t mod .                                   # the fast preset
#   docker build -t mod:accurate --build-arg MOD_PRESET=accurate .
#   docker build -t mod:int8 --build-arg MOD_PRECISION=int8 .  # the preset's int8 encoders too, used by default
#   docker run -p 8000:8000 -e MOD_API_KEY=change-me mod
# Settings are the MOD_* variables (MOD_API_KEY, MOD_ALLOW_URLS, MOD_MAX_BYTES, …); a policy file can be
# mounted and named with MOD_CONFIG. MOD_PRESET must name the preset the image was built with.

# Node 24, the active LTS line.
ARG NODE_IMAGE=node:24-bookworm-slim

# Install scripts are skipped everywhere: onnxruntime-node ships its CPU binaries in the package (its
# script only fetches GPU extras; .npmrc turns install scripts off too), sharp loads its prebuilt @img/* packages,
# and ffmpeg-static's script would download a binary from the internet; Debian's ffmpeg is used instead.

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY scripts/bundle-typebox.mjs scripts/manifest-order.mjs ./scripts/
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY --chmod=755 scripts/docker/prune-onnxruntime.sh /usr/local/bin/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
 && prune-onnxruntime.sh node_modules

# The system layer comes before any application file, so a code change does not re-run apt-get. tini is
# PID 1: it passes SIGTERM/SIGINT on to node and reaps exited children (ffmpeg decoders).
FROM ${NODE_IMAGE} AS system
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg tini \
 && rm -rf /var/lib/apt/lists/*
# onnxruntime-node's usage telemetry (device id, event database, uploads) stays off in every process of the
# image, `node -e` one-offs included; bin/run.js sets it too.
ENV ORT_DISABLE_TELEMETRY=1

FROM system AS app
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/oclif.manifest.json ./
COPY package.json ./
COPY --chmod=755 bin ./bin
COPY models ./models
RUN ln -s /app/bin/run.js /usr/local/bin/mod

# Downloads and verifies the preset's files (the only step that needs the internet), then scores one
# image so the prompt embeddings of the default policy are cached too: the first start needs no
# text-encoder run. `scan` exits 0 (safe) or 1 (a violation); 2 would be a model problem.
FROM app AS weights
ARG MOD_PRESET=fast
ARG MOD_PRECISION=fp32
ENV MOD_CACHE_DIR=/opt/mod/cache MOD_PRESET=${MOD_PRESET} MOD_PRECISION=${MOD_PRECISION}
RUN node bin/run.js models pull "$MOD_PRESET" --precision "$MOD_PRECISION" \
 && node -e "require('sharp')({create: {width: 64, height: 64, channels: 3, background: '#808080'}}).png().toFile('/tmp/warm.png')" \
 && { node bin/run.js scan /tmp/warm.png --json > /dev/null || [ $? -eq 1 ]; } \
 && rm /tmp/warm.png

FROM app AS runtime
ARG MOD_PRESET=fast
ARG MOD_PRECISION=fp32
# glibc returns the large blocks onnxruntime frees while loading a model, instead of keeping a varying
# 35-240 MiB of them per worker; two malloc arenas and V8 semi-spaces of 4 MiB leave about 30 MiB less per
# process (bench/README.md, memory). mod serve --workers N gives its workers the same.
ENV NODE_ENV=production \
    MALLOC_MMAP_THRESHOLD_=1048576 \
    MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS=--max-semi-space-size=4 \
    MOD_PRESET=${MOD_PRESET} \
    MOD_PRECISION=${MOD_PRECISION} \
    MOD_CACHE_DIR=/opt/mod/cache \
    MOD_FFMPEG=/usr/bin/ffmpeg
# The cache stays writable for its owner: a mounted policy with new prompts adds their embeddings there.
COPY --from=weights --chown=node:node /opt/mod/cache /opt/mod/cache
USER node
EXPOSE 8000
# Slim images have no curl; GET /health never needs the API key.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8000/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# On SIGTERM (passed on by tini) the server stops accepting, finishes the requests in flight and exits 0;
# set MOD_DRAIN_DELAY_MS to keep serving while /ready answers 503 first.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["mod", "serve", "--host", "0.0.0.0", "--port", "8000"]
