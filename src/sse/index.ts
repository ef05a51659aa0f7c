// Public exports of src/sse (re-exports only).
export {};
