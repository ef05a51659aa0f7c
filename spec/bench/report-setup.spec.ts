import { markdown, runResults } from './run-results';

// docs/benchmarks.md's set-up section: every run's CPU per stream beside every run's TTFB p99,
// and the judged rate's runs of every proxy grouped by their CPU per stream.

/** One rate's row as bench/scenarios/setup.js merges it, from its runs' CPU ms/stream and TTFB p99. */
function rate(ratePerS: number, cpu: number[], p99: number[], warm = false): object {
  const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
  return {
    ratePerS,
    ...(warm ? { warm: true, warmupStreams: 4000 } : {}),
    streams: ratePerS * 2,
    streamsTotal: ratePerS * 2 * cpu.length,
    ttfbMs: { p50: 2, p99: mid(p99) },
    firstEventMs: { p99: mid(p99) },
    cpuMsPerStream: mid(cpu),
    mainCpuMsPerStream: mid(cpu) * 0.8,
    completed: ratePerS * 2 * cpu.length,
    refused: 0,
    failed: 0,
    ttfbP99Runs: p99,
    cpuMsPerStreamRuns: cpu,
  };
}

function results(setup: Record<string, object>): object {
  return runResults({ SETUP: setup });
}

/** The markdown table that follows the line starting with `title`, as rows of trimmed cells. */
function tableAfter(page: string, title: string): string[][] {
  const at = page.indexOf(title);
  if (at < 0) return [];
  const table = page.slice(page.indexOf('\n|', at) + 1).split('\n\n')[0] as string;
  return table
    .split('\n')
    .slice(2)
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

describe('bench report: set-up rate', () => {
  const setup = {
    direct: { byRate: [rate(1000, [0, 0, 0, 0], [5, 6, 7, 8])], repeats: 4 },
    naive: { byRate: [rate(500, [1.5, 1.5, 1.5, 1.5], [30, 30, 30, 30]), rate(1000, [0.8, 0.9, 1.3, 1.0], [40, 60, 400, 120]), rate(1000, [0.7, 0.7, 0.7, 0.7], [20, 20, 20, 20], true)], repeats: 4 },
    'tidegate-pass': { byRate: [rate(1000, [0.82, 1.2, 0.95, 1.1], [45, 300, 70, 150])], repeats: 4 },
  };
  const page = markdown(results(setup), {});

  it("shows every run's CPU per stream beside every run's TTFB p99", () => {
    const rows = tableAfter(page, '| system | opened/s |');
    const naive = rows.find((r) => r[0] === 'naive Express proxy' && r[1] === '1000');
    expect(naive?.[4]).toBe('40 / 60 / 400 / 120');
    expect(naive?.[7]).toBe('0.80 / 0.90 / 1.30 / 1.00');
  });

  it("groups the judged rate's runs of every proxy, not direct's nor the warm rows, by CPU per stream with their median TTFB p99", () => {
    expect(page).toContain('TTFB p99 at 1000/s by the run\'s CPU per stream');
    expect(tableAfter(page, "TTFB p99 at 1000/s by the run's CPU per stream")).toEqual([
      ['0.80–0.82', '2', '43'],
      ['0.90–0.95', '2', '65'],
      ['1.00–1.10', '2', '135'],
      ['1.20–1.30', '2', '350'],
    ]);
  });

  it('leaves the grouping out when fewer than eight runs measured both figures', () => {
    const few = markdown(results({ naive: setup.naive }), {});
    expect(few).toContain('| system | opened/s |');
    expect(few).not.toContain("by the run's CPU per stream");
  });
});
