import { Counter, Gauge } from 'prom-client';
import type { GatewayMetrics } from '../metrics';
import type { ResumeStore } from './store';

/**
 * The resume metrics, on the gateway's registry: `tidegate_resume_log_bytes` and
 * `tidegate_resume_detached_streams` (sampled from the stores at scrape time),
 * `tidegate_resumes_total{route}` and `tidegate_resume_gap_refusals_total{route}`.
 */
export class ResumeMetrics {
  readonly resumes: Counter<'route'>;
  readonly gapRefusals: Counter<'route'>;

  constructor(metrics: GatewayMetrics, stores: () => readonly ResumeStore[]) {
    const registers = [metrics.registry];
    new Gauge({
      name: 'tidegate_resume_log_bytes',
      help: 'Bytes held by the replay logs of resumable streams in this process, with 4096 for each finished stream kept (bytes).',
      registers,
      collect() {
        this.set(stores().reduce((n, s) => n + s.logBytes(), 0));
      },
    });
    new Gauge({
      name: 'tidegate_resume_detached_streams',
      help: 'Resumable streams with no reader attached whose upstream is still held (lingering).',
      registers,
      collect() {
        this.set(stores().reduce((n, s) => n + s.detachedStreams(), 0));
      },
    });
    this.resumes = new Counter({ name: 'tidegate_resumes_total', help: 'Resumes served (a reader attached to a stream after its first).', labelNames: ['route'], registers });
    this.gapRefusals = new Counter({
      name: 'tidegate_resume_gap_refusals_total',
      help: 'Resumes refused with 410 ERR_TIDEGATE_RESUME_GAP: the events after the given one left the window.',
      labelNames: ['route'],
      registers,
    });
  }
}
