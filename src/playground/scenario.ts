import { z } from 'zod';

/** Bytes in one MiB. */
const MIB = 1024 * 1024;

/** The limits every run is held to; the router's options may lower (never raise) them. */
export const PLAYGROUND_LIMITS = {
  /** Fastest simulated model, tokens/s. */
  maxProducerTokensPerSec: 5000,
  /** Fastest emulated consumer, bytes/s. */
  maxConsumerBytesPerSec: 10 * MIB,
  /** Smallest per-stream byte budget: the socket's 16 KiB `writableHighWaterMark` plus a batch must fit. */
  minBudgetBytes: 32 * 1024,
  /** Largest per-stream byte budget. */
  maxBudgetBytes: 4 * MIB,
  /** Longest producer run, s. */
  maxDurationSec: 60,
} as const;

/** One scenario: what the page's form posts to `POST /runs`. Units in the names. */
export const scenarioSchema = z.object({
  /** Shown on the run's panel. */
  label: z.string().max(60).default(''),
  /** Tokens the simulated model emits per second while it has demand. */
  producerTokensPerSec: z.number().int().min(1).max(PLAYGROUND_LIMITS.maxProducerTokensPerSec).default(200),
  /** Bytes per second the emulated client reads; 0 means stalled (it reads nothing). */
  consumerBytesPerSec: z.number().int().min(0).max(PLAYGROUND_LIMITS.maxConsumerBytesPerSec).default(8192),
  /** `limitRate(highTide, lowTide)` next to the producer, or `null` for none. */
  limitRate: z
    .object({
      highTide: z.number().int().min(1).max(4096),
      lowTide: z.number().int().min(0).max(4096).optional(),
    })
    .nullable()
    .default(null),
  /** The backpressure operator: `none` = pure demand (the producer pauses), or Reactor's three. */
  strategy: z.enum(['none', 'buffer', 'drop', 'latest']).default('none'),
  /** `onBackpressureBuffer` settings, used when `strategy` is `buffer`. */
  buffer: z
    .object({
      /** `false`: no `maxBytes` (grows until the playground's demo cap). */
      bounded: z.boolean().default(true),
      overflow: z.enum(['error', 'drop-latest', 'drop-oldest', 'terminate']).default('terminate'),
    })
    .default({ bounded: true, overflow: 'terminate' }),
  /** The per-stream byte budget shared by the bounded buffer and the demand bridge (`res.writableLength` included). */
  budgetBytes: z.number().int().min(PLAYGROUND_LIMITS.minBudgetBytes).max(PLAYGROUND_LIMITS.maxBudgetBytes).default(64 * 1024),
  /** How long the producer runs, s. */
  durationSec: z.number().int().min(1).max(PLAYGROUND_LIMITS.maxDurationSec).default(20),
});

/** A validated scenario (defaults applied). */
export type Scenario = z.infer<typeof scenarioSchema>;

/** The scenario input as posted (every field optional). */
export type ScenarioInput = z.input<typeof scenarioSchema>;
