# syntax=docker/dockerfile:1
# One image for both the gateway (default command) and the simulated upstream
# (`node dist/simulator/cli.js`): see docker-compose.yml.

FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the sources are not copied yet (the `prepare` build runs below)
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8080 9090
CMD ["node", "dist/gateway/cli.js"]
