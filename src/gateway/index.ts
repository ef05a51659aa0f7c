/**
 * `tidegate/gateway`: the OpenAI/Anthropic-compatible gateway (Express app, config loading and
 * validation, logger, Prometheus metrics, server start-up). Loads winston, prom-client, zod and
 * yaml; the library itself is the package's main entry, `tidegate`.
 */
export { AdmissionError } from './admission';
export type { Admission, RefusalReason, ReleaseStream } from './admission';
export { createGatewayApp } from './app';
export type { GatewayApp, GatewayControl, GatewayDeps } from './app';
export {
  ConfigError,
  configSchema,
  DEFAULT_LIMITS,
  DEFAULT_POLICY,
  DEFAULT_RETRY,
  DEFAULT_ROUTES,
  DEFAULT_TIMEOUTS,
  ENV_OVERRIDES,
  loadConfig,
  parseConfig,
  readConfigFile,
  resolveRoutes,
} from './config';
export type { AdmissionLimits, GatewayConfig, LoadConfigOptions, ResolvedRoute, RetrySettings, RouteConfig, StreamPolicy, UpstreamTimeouts } from './config';
export { createLogger } from './logger';
export type { Logger, LoggerOptions } from './logger';
export { GatewayMetrics } from './metrics';
export type { LiveStream, StreamSnapshot } from './metrics';
export type { PolicyContext, RelayOutcome, StreamPolicyFn } from './relay/relay';
export { deferContinue } from './expect-continue';
export { serverTimeouts, startGateway } from './server';
export type { RunningGateway } from './server';
