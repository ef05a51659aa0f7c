import { getEventListeners } from 'node:events';
import { watchAbort } from '../../src/gateway/abort-watch';

describe('watchAbort', () => {
  it('adds one abort listener to the signal however many watch it', () => {
    const controller = new AbortController();
    const stops = Array.from({ length: 1000 }, () => watchAbort(controller.signal, () => undefined));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (const stop of stops) stop();
  });

  it('calls every watcher once, in order, when the signal aborts; a stopped watcher is not called', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    watchAbort(controller.signal, () => calls.push('a'));
    const stopB = watchAbort(controller.signal, () => calls.push('b'));
    watchAbort(controller.signal, () => calls.push('c'));
    stopB();
    controller.abort();
    controller.abort();
    expect(calls).toEqual(['a', 'c']);
  });

  it('keeps the watchers of two signals apart', () => {
    const one = new AbortController();
    const two = new AbortController();
    const calls: string[] = [];
    watchAbort(one.signal, () => calls.push('one'));
    watchAbort(two.signal, () => calls.push('two'));
    two.abort();
    expect(calls).toEqual(['two']);
  });

  it('a watcher that throws does not keep the others from running; its error is rethrown later', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const deferred: Array<() => void> = [];
    const spy = jest.spyOn(globalThis, 'queueMicrotask').mockImplementation((task) => void deferred.push(task));
    try {
      watchAbort(controller.signal, () => {
        throw new Error('boom');
      });
      watchAbort(controller.signal, () => calls.push('after'));
      controller.abort();
    } finally {
      spy.mockRestore();
    }
    expect(calls).toEqual(['after']);
    expect(deferred).toHaveLength(1);
    expect(() => deferred[0]?.()).toThrow('boom');
  });
});
