# syntax=docker/dockerfile:1
# Build stage: install everything, compile TypeScript.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY jobs ./jobs
COPY bench ./bench
RUN npm run build && npm prune --omit=dev

# Runtime stage: compiled code, production dependencies and the real sample only, as a non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    REPORTS_WAREHOUSE=/app/data/warehouse.duckdb \
    REPORTS_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY data/sample ./data/sample
RUN chown -R node:node /app/data
USER node
VOLUME /app/data
EXPOSE 8080
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["run"]
