import { z } from 'zod';
import { DEFAULT_MAX_BODY_BYTES } from '../../http/errors';
import { corsSchema } from './cors';
import { DEFAULT_UPSTREAM_RECEIVE_BYTES, MIN_UPSTREAM_RECEIVE_BYTES } from '../../http/node-hooks';
import { httpUrl, int, ms } from './fields';
import { limitsSchema } from './limits';
import { redisSchema, resumeStoreSchema } from '../resume/settings';
import { routeSchema } from './routes';
import { policyShape, retryShape, timeoutsShape } from './stream';

/** Streams the `tidegate` command relays through its routes before it listens when `warmup.streams` is unset. */
export const DEFAULT_WARMUP_STREAMS = 2000;

export const configSchema = z
  .object({
    port: int(0).max(65535).default(8080),
    host: z.string().min(1).default('127.0.0.1'),
    upstream: z
      .object({
        /** Base URL of the upstream server; absent = the embedded simulator. */
        url: httpUrl.optional(),
        /** Sent upstream as `Authorization: Bearer …` (openai, passthrough) or `x-api-key` (anthropic); never taken from the client. */
        apiKey: z.string().optional(),
        /** Static headers added to every upstream request. */
        headers: z.record(z.string(), z.string()).default({}),
        /**
         * Most bytes of an upstream body the gateway reads whole, bytes (default 8 MiB, at least
         * 1024): a non-stream answer; an error body is read up to the lower of this and 64 KiB.
         * A longer body aborts the upstream request and answers 502
         * `ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE`. Event streams are bounded by `stream.*` instead.
         */
        maxBodyBytes: int(1024).default(DEFAULT_MAX_BODY_BYTES),
        /**
         * `SO_RCVBUF` of every upstream socket, bytes (0: the kernel's autotuning, up to
         * `net.ipv4.tcp_rmem`'s maximum): a paused stream leaves at most about twice this unread
         * in the kernel, and a stream reads at most this much per round trip.
         */
        kernelReceiveBytes: int(0)
          .refine((v) => v === 0 || v >= MIN_UPSTREAM_RECEIVE_BYTES, `0 or at least ${MIN_UPSTREAM_RECEIVE_BYTES}: a smaller window than half a loopback segment waits on TCP's persist timer`)
          .default(DEFAULT_UPSTREAM_RECEIVE_BYTES),
      })
      .strict()
      .prefault({}),
    /** Stream policy defaults for every route. */
    stream: z.object(policyShape).partial().strict().default({}),
    timeouts: z.object(timeoutsShape).partial().strict().default({}),
    retry: z.object(retryShape).partial().strict().default({}),
    /** Routes; default: openai on /v1/chat/completions and anthropic on /v1/messages. */
    routes: z.array(routeSchema).optional(),
    /** Gateway-wide bounds of the resume stores. */
    resumeStore: resumeStoreSchema,
    /** Redis of the `redis` resume store (`REDIS_URL`); never needed otherwise. */
    redis: redisSchema,
    shutdown: z
      .object({
        /** Streams may finish for this long after SIGTERM or SIGINT, ms; then they get ERR_TIDEGATE_SHUTDOWN. */
        graceMs: ms(0).default(10_000),
      })
      .strict()
      .prefault({}),
    /** Admission control: what a client may hold before it is refused (docs/gateway.md, "Running it in public"). */
    limits: limitsSchema,
    playground: z
      .object({
        /**
         * Serve the live backpressure playground at `/playground`. Default (unset): only when
         * `host` is a loopback address (127.0.0.0/8, ::1, localhost); `true` serves it on any address.
         */
        enabled: z.boolean().optional(),
        /** Telemetry subscribers of one run at once; more get 429 with `Retry-After`. */
        maxTelemetrySubscribers: int(1).max(100_000).default(16),
        /** Unfinished runs per client address at once (4: two tabs in compare mode); more get 429 with `Retry-After`. */
        maxRunsPerClient: int(1).max(1000).default(4),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        enabled: z.boolean().default(true),
        path: z.string().startsWith('/').default('/metrics'),
      })
      .strict()
      .prefault({}),
    /** Browser origins allowed to call the gateway (off by default; docs/gateway.md, "Browsers and CORS"). */
    cors: corsSchema,
    debug: z
      .object({
        /**
         * Serve `GET /debug/streams`: every live stream's demand and buffers as JSON (off by
         * default: it names streams and routes to whoever can reach the port).
         */
        streams: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    warmup: z
      .object({
        /**
         * Streams the gateway relays through its own routes before it listens, against upstreams
         * of its own on 127.0.0.1, so its first clients meet optimized code (0: none; unset:
         * {@link DEFAULT_WARMUP_STREAMS} for the `tidegate` command, none for `startGateway()`;
         * docs/gateway.md, "Warm-up").
         */
        streams: int(0).max(100_000).optional(),
      })
      .strict()
      .prefault({}),
    simulator: z
      .object({
        tokensPerSecond: z.number().positive().default(50),
        ttftMs: ms(0).default(300),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/** A validated gateway configuration, as written (route values not yet merged with the defaults). */
export type GatewayConfig = z.infer<typeof configSchema>;
