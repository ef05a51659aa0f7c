import * as path from 'path';

/** bench/report/markdown.js's page for a run's results. */
export type Markdown = (res: object, charts: Record<string, boolean>) => string;
export const { markdown } = require(path.join(__dirname, '../../bench/report/markdown')) as { markdown: Markdown };

/** A baseline the run could not start, and why. */
export interface Skipped {
  target: string;
  why: string;
}

/** A full run's results as bench/run.js writes them, with these scenarios and skipped baselines. */
export function runResults(scenarios: Record<string, object>, skipped: Skipped[] = []): object {
  return {
    mode: 'full',
    startedAt: '2026-01-01T00:00:00.000Z',
    command: 'npm run bench',
    durationS: 60,
    build: { short: 'abcdef0123', dirty: false },
    ref: null,
    variants: [],
    machine: { nproc: 2, model: 'test', memGb: 4, kernel: '6', node: 'v20', fdHard: 1024, loadavgStart: [0], loadavgEnd: [0] },
    params: {},
    gatewayCommand: 'dist/gateway/cli.js --port PORT',
    skipped,
    scenarios,
  };
}
