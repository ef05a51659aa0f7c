// Re-exports every operator, one file each, named as in Reactor.
export { doFinally } from './do-finally';
export type { FinallySignal } from './do-finally';
export { doOnCancel } from './do-on-cancel';
export { doOnRequest } from './do-on-request';
export { filter } from './filter';
export { firstTimeout } from './first-timeout';
export { idleTimeout } from './idle-timeout';
export { limitRate } from './limit-rate';
export { limitRequest } from './limit-request';
export { map } from './map';
export { onBackpressureBuffer } from './on-backpressure-buffer';
export type { BufferOverflowStrategy, OnBackpressureBufferOptions } from './on-backpressure-buffer';
export { onBackpressureDrop } from './on-backpressure-drop';
export { onBackpressureLatest } from './on-backpressure-latest';
export { onDiscard } from './on-discard';
export { take } from './take';
export { totalTimeout } from './total-timeout';
