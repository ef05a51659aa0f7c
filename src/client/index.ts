// Public exports of src/client (re-exports only).
export {};
