# syntax=docker/dockerfile:1
# reports-sync as a service: `reports-sync run` (scheduled syncs + /healthz and the reader on :8080).
# Build: docker build -t reports-sync .   Run: see README.md, section "Docker".
# test/daemon/dockerfile.test.ts checks what this file relies on (COPY sources, the entry point, the
# healthcheck command) on every `npm test`, since no Docker engine runs on the CI machines.

# Build stage: install everything, compile TypeScript, then drop the dev dependencies.
FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY jobs ./jobs
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Runtime stage (current Node LTS, Debian slim): compiled code, production dependencies and the real
# sample only, as the image's non-root user `node` (uid 1000).
FROM node:26-bookworm-slim
ENV NODE_ENV=production \
    REPORTS_WAREHOUSE=/app/data/warehouse.duckdb \
    REPORTS_HOST=0.0.0.0 \
    REPORTS_PORT=8080
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY data/sample ./data/sample
RUN mkdir -p /app/data/published && chown -R node:node /app/data
USER node
# The warehouse, its published snapshot (data/published: DuckDB copy + Parquet) live here.
VOLUME /app/data
EXPOSE 8080
# Slim images have no curl: node's own fetch asks /healthz (200 while the warehouse answers).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.REPORTS_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: a running sync gets REPORTS_SHUTDOWN_GRACE_MS (default 8 s,
# under `docker stop`'s 10 s) to finish, then it is aborted and recorded as aborted.
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["run"]
