import { createFlow } from '../flow/sources/create';
import type { Flow } from '../flow/flow';
import { onBackpressureLatest } from '../flow/operators';
import type { SseEventInit } from '../sse';
import type { PlaygroundRun } from './run';

/**
 * A run's telemetry as SSE events: `event: sample` every `intervalMs` with {@link RunSample}
 * JSON, then `event: end` with the final sample, then completion. Each sample is a full
 * snapshot (notes included), so `onBackpressureLatest()` may drop stale ones for a slow page
 * without losing anything: the telemetry eats its own cooking.
 */
export function telemetryFlow(run: PlaygroundRun, intervalMs: number): Flow<SseEventInit> {
  return createFlow<SseEventInit>((sink) => {
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const emit = (): void => {
      const sample = run.sample();
      if (sample.state === 'finished') {
        done = true;
        if (timer !== undefined) clearInterval(timer);
        timer = undefined;
        sink.next({ event: 'end', data: JSON.stringify(sample) });
        sink.complete();
        return;
      }
      sink.next({ event: 'sample', data: JSON.stringify(sample) });
    };
    emit();
    if (!done) timer = setInterval(emit, intervalMs);
    return () => {
      if (timer !== undefined) clearInterval(timer);
    };
  }).pipe(onBackpressureLatest<SseEventInit>());
}
