import { z } from 'zod';

/** Per-stream backpressure settings (bytes, ms). */
export const streamSchema = z.object({
  /** Events the bridge requests per batch. */
  prefetch: z.number().int().min(1).max(4096).default(16),
  /** Per-stream byte budget: chain buffers + bridge + `res.writableLength`. */
  maxBufferedBytes: z.number().int().min(1024).default(256 * 1024),
  /** `pause`: demand pauses the upstream (default). `terminate`: read the upstream at full speed into the budget, end the stream with ERR_TIDEGATE_OVERFLOW when it is spent. */
  overflow: z.enum(['pause', 'terminate']).default('pause'),
  /** End a stream whose client accepted nothing for this long (0 disables). */
  stallTimeoutMs: z.number().int().min(0).default(30_000),
  /** `: ping` after this much silence (0 disables). */
  heartbeatMs: z.number().int().min(0).default(15_000),
  /** Max bytes of one upstream SSE event. */
  maxEventBytes: z.number().int().min(1024).default(1024 * 1024),
});

/** The gateway's configuration, validated at start; a bad value names its field. */
export const configSchema = z.object({
  port: z.number().int().min(0).max(65535).default(8080),
  host: z.string().min(1).default('127.0.0.1'),
  upstream: z
    .object({
      /** Base URL of an OpenAI/Anthropic-compatible server; absent = the embedded simulator. */
      url: z.string().url().optional(),
      /** Sent upstream as `Authorization: Bearer …` / `x-api-key`; never taken from the client. */
      apiKey: z.string().optional(),
    })
    .default({}),
  stream: streamSchema.default(streamSchema.parse({})),
  simulator: z
    .object({
      tokensPerSecond: z.number().positive().default(50),
      ttftMs: z.number().int().min(0).default(300),
    })
    .default({ tokensPerSecond: 50, ttftMs: 300 }),
});

/** A validated gateway configuration. */
export type GatewayConfig = z.infer<typeof configSchema>;

/** Raised when the configuration is invalid; the message names each bad field. */
export class ConfigError extends Error {
  readonly code = 'ERR_TIDEGATE_CONFIG';
}

/** Validates a raw configuration object; throws {@link ConfigError} naming the fields. */
export function parseConfig(raw: unknown): GatewayConfig {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const details = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new ConfigError(`invalid configuration: ${details}`);
}
