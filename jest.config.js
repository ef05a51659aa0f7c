/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/spec'],
  testMatch: ['**/*.spec.ts'],
  // Sets the environment the spawned gateway processes inherit (spec/harness/env.ts).
  setupFiles: ['<rootDir>/spec/harness/env.ts'],
  // Closes the servers, sockets and processes the harness opened that a spec left open.
  setupFilesAfterEnv: ['<rootDir>/spec/harness/close-all.ts'],
  // Socket specs open real servers and gateway processes and measure their timing and memory:
  // one spec file at a time leaves them the machine's cores, so a result never depends on
  // which other heavy spec happened to run beside it.
  maxWorkers: 1,
  testTimeout: 30000,
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
};
