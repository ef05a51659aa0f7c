import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BridgeState } from '../express/send-flow';
import { socketOptionsUnavailable } from '../http/socket-options';

/** What a live stream reports to the gauges sampled at scrape time. */
export interface LiveStream {
  /** Bytes the stream holds now (chain buffers + bridge + socket buffer). */
  bufferedBytes(): number;
  /** True while the upstream body is paused because the client has not asked for more. */
  upstreamPaused(): boolean;
  /** Where the stream's demand and bytes are now (served by `GET /debug/streams` when enabled). */
  describe?: (() => StreamSnapshot) | undefined;
  /**
   * The kernel's queues of the stream's sockets, bytes: the client socket's send queue and the
   * upstream socket's receive queue; a side that cannot be read is absent (no socket options
   * addon, a socket already gone).
   */
  kernelBytes?: (() => KernelBytes) | undefined;
}

/** The kernel's queues of one stream's sockets, bytes (see {@link LiveStream.kernelBytes}). */
export interface KernelBytes {
  /** Client socket: sent and unacknowledged plus unsent (`SIOCOUTQ`). */
  clientSendQueue?: number | undefined;
  /** Of those, not yet sent: what `kernelUnsentBytes` bounds (`SIOCOUTQNSD`). */
  clientUnsent?: number | undefined;
  /** Upstream socket: received and not yet read by the gateway (`SIOCINQ`); what `upstream.kernelReceiveBytes` bounds. */
  upstreamReceiveQueue?: number | undefined;
}

/**
 * One live stream's demand and buffers at one moment: which link waits for which (a stream that
 * does not move shows here whether the client, the bridge or the upstream holds it). Bytes are
 * encoded bytes, times ms.
 */
export interface StreamSnapshot {
  streamId: string;
  route: string;
  /** ms since the request arrived. */
  ageMs: number;
  /** The demand bridge (client side). */
  bridge?: BridgeState | undefined;
  /** The upstream body (read side); absent on resumable routes, which read through `connectSse`. */
  upstream?:
    | {
        /** Bytes read from the upstream socket and not yet handed on (the body's buffer and parked chunks). */
        bufferedBytes: number;
        /** Reads are sized to the budget's room (plain HTTP, identity body). */
        readsSized: boolean;
        /** `body.isPaused()`: nothing asked for the body's next chunk. */
        paused: boolean;
        /** `body.readableEnded`. */
        ended: boolean;
      }
    | undefined;
  /** The byte relay's read gate: requests held for want of room in the budget (0 when none wait). */
  heldReadDemand?: number | undefined;
  /** The kernel's queues of the stream's sockets, where they can be read. */
  kernel?: KernelBytes | undefined;
}

/**
 * The gateway's Prometheus metrics on their own `Registry` (never the global one, so several
 * gateways can live in one process). Gauges over live streams are sampled at scrape time.
 */
export class GatewayMetrics {
  readonly registry: Registry;
  readonly activeStreams: Gauge<'route'>;
  readonly upstreamRequests: Counter<'route' | 'outcome'>;
  readonly streams: Counter<'route' | 'outcome'>;
  readonly overflowTerminations: Counter<'route'>;
  readonly bytesOut: Counter<'route'>;
  readonly retries: Counter<'route' | 'reason'>;
  readonly ttft: Histogram<'route'>;
  readonly duration: Histogram<'route' | 'outcome'>;
  /** Requests refused by admission control, by {@link RefusalReason}. */
  readonly admissionRefusals: Counter<'reason'>;
  private readonly live = new Set<LiveStream>();

  constructor(options: { defaultMetrics?: boolean | undefined } = {}) {
    const registry = (this.registry = new Registry());
    const live = this.live;
    this.activeStreams = new Gauge({ name: 'tidegate_active_streams', help: 'Requests being relayed now: streams, and whole answers (stream: false, model lists).', labelNames: ['route'], registers: [registry] });
    this.upstreamRequests = new Counter({
      name: 'tidegate_upstream_requests_total',
      help: 'Upstream requests by outcome: ok (streaming or JSON answer), http_<status>, redirect, unreachable, reset, timeout, aborted, error.',
      labelNames: ['route', 'outcome'],
      registers: [registry],
    });
    this.streams = new Counter({
      name: 'tidegate_streams_total',
      help: 'Client streams by outcome (completed, upstream_unreachable, upstream_reset, overflow, stalled, client_closed, timeout, upstream_error, upstream_redirect, bad_request, shutdown).',
      labelNames: ['route', 'outcome'],
      registers: [registry],
    });
    this.overflowTerminations = new Counter({
      name: 'tidegate_overflow_terminations_total',
      help: 'Streams ended with ERR_TIDEGATE_OVERFLOW because their byte budget was spent.',
      labelNames: ['route'],
      registers: [registry],
    });
    this.bytesOut = new Counter({ name: 'tidegate_bytes_out_total', help: 'Response body bytes written to clients (bytes).', labelNames: ['route'], registers: [registry] });
    this.retries = new Counter({ name: 'tidegate_upstream_retries_total', help: 'Upstream attempts retried before anything reached the client.', labelNames: ['route', 'reason'], registers: [registry] });
    this.ttft = new Histogram({
      name: 'tidegate_time_to_first_token_seconds',
      help: 'From request arrival to the first token written to the client (seconds).',
      labelNames: ['route'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'tidegate_stream_duration_seconds',
      help: 'From request arrival to the end of the stream (seconds).',
      labelNames: ['route', 'outcome'],
      buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600],
      registers: [registry],
    });
    this.admissionRefusals = new Counter({
      name: 'tidegate_admission_refusals_total',
      help: 'Requests refused before the upstream was asked, by reason: connections, streams, client_streams, pipelining (503/429), body_too_large (413), body_timeout (408), body_encoding (415), body_too_deep (400), body_too_many_values (413), bad_request (400: no JSON object, no model id, a resume naming no event), media_type (415), method (405), shutdown (503 while draining), resume_not_found (404), resume_forbidden (403), resume_gap (410), response_in_progress (409: a Responses retrieve without stream=true while the response streams).',
      labelNames: ['reason'],
      registers: [registry],
    });
    new Gauge({
      name: 'tidegate_buffered_bytes',
      help: 'Bytes held by live streams: chain buffers, bridge and socket buffers (bytes).',
      registers: [registry],
      collect() {
        let total = 0;
        for (const s of live) total += s.bufferedBytes();
        this.set(total);
      },
    });
    new Gauge({
      name: 'tidegate_upstream_paused_streams',
      help: 'Live streams whose upstream body is paused because the client is not reading.',
      registers: [registry],
      collect() {
        let n = 0;
        for (const s of live) if (s.upstreamPaused()) n++;
        this.set(n);
      },
    });
    if (socketOptionsUnavailable() === undefined) {
      kernelGauge(registry, live, 'tidegate_kernel_client_send_queue_bytes', "Kernel send queues of live streams' client sockets: unacknowledged plus unsent (bytes).", (k) => k.clientSendQueue);
      kernelGauge(registry, live, 'tidegate_kernel_client_unsent_bytes', "Unsent bytes in live streams' client send queues, bounded by kernelUnsentBytes each (bytes).", (k) => k.clientUnsent);
      kernelGauge(registry, live, 'tidegate_kernel_upstream_receive_queue_bytes', "Kernel receive queues of live streams' upstream sockets, unread by the gateway (bytes).", (k) => k.upstreamReceiveQueue);
    }
    if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'tidegate_' });
  }

  /**
   * A snapshot of every live stream that can describe itself, oldest first. The relay registers a
   * stream once its upstream answered and its response starts: a request still connecting,
   * waiting for the first byte or between retries is counted by `tidegate_active_streams` only.
   */
  snapshotStreams(): StreamSnapshot[] {
    const out: StreamSnapshot[] = [];
    for (const s of this.live) if (s.describe !== undefined) out.push(s.describe());
    return out;
  }

  /** Registers a live stream for the scrape-time gauges; returns its removal. */
  track(stream: LiveStream): () => void {
    this.live.add(stream);
    return () => this.live.delete(stream);
  }
}

/** A gauge summing one kernel queue over the live streams at scrape time (only where the addon reads queues). */
function kernelGauge(registry: Registry, live: Set<LiveStream>, name: string, help: string, pick: (k: KernelBytes) => number | undefined): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      let total = 0;
      for (const s of live) total += (s.kernelBytes === undefined ? undefined : pick(s.kernelBytes())) ?? 0;
      this.set(total);
    },
  });
}
