// The gateway's configuration: one module per job (re-exports only).
export { corsSchema, type CorsSettings } from './cors';
export { ENV_OVERRIDES, LIST_FIELDS, NUMERIC_FIELDS, parseDecimal, setField } from './env';
export { API_SPECS, DEFAULT_APIS, inferApi, ROUTE_APIS, type RouteApi, type RouteApiSpec } from './apis';
export { DEFAULT_LIMITS, limitsSchema, type AdmissionLimits } from './limits';
export { ConfigError, loadConfig, parseConfig, readConfigFile, type LoadConfigOptions } from './load';
export { DEFAULT_ROUTES, resolveRoutes, routeSchema, type ResolvedRoute, type RouteConfig } from './routes';
export { configSchema, DEFAULT_WARMUP_STREAMS, type GatewayConfig } from './schema';
export { DEFAULT_POLICY, DEFAULT_RETRY, DEFAULT_TIMEOUTS, type RetrySettings, type StreamPolicy, type UpstreamTimeouts } from './stream';
