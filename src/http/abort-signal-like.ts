/**
 * What tidegate reads of an abort signal: `aborted`, `reason` and its `'abort'` listeners. A
 * WHATWG `AbortSignal` is one; so is the gateway's per-stream signal, a `CallSignal`
 * (`node-hooks.ts`), which has no `onabort`, no `throwIfAborted()` and is no `EventTarget`:
 * pass neither it to `AbortSignal.any()` nor to WHATWG `fetch()`.
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  /** Why it aborted; `undefined` until then. */
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
