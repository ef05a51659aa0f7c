// Public exports of src/express (re-exports only).
export {};
