import { markdown, runResults, type Skipped } from './run-results';

// docs/benchmarks.md's method lists the systems of the run it describes: a baseline this machine
// could not run (nginx not installed) is named once, as skipped with its reason, never as a row of
// the systems table.

const NGINX_WHY = 'nginx not installed (apt-get install nginx-light)';
const row = { cpuSPerGb: 1, mbPerS: 100, fffd: 0 };

function results(skipped: Skipped[], rows: string[]): object {
  return runResults({ S2: Object.fromEntries(rows.map((n) => [n, row])) }, skipped);
}

/** The method section: from "## Method" to the next "## ". */
const methodOf = (page: string): string => page.slice(page.indexOf('## Method'), page.indexOf('## Results'));
/** The first column of the method's "system | what it is" table. */
function systemsOf(method: string): string[] {
  const start = method.indexOf('| system | what it is |');
  if (start < 0) return [];
  const table = method.slice(start).split('\n\n')[0] as string;
  return table
    .split('\n')
    .slice(2)
    .map((l) => (l.split('|')[1] as string).trim());
}

describe('bench report method', () => {
  const ran = ['naive', 'pipeline', 'tidegate-pass', 'tidegate-openai', 'tidegate-openai~parallel GC'];
  const skipped = [
    { target: 'nginx', why: NGINX_WHY },
    { target: 'nginx-sndbuf64k', why: NGINX_WHY },
  ];

  it('lists only the systems that ran', () => {
    const method = methodOf(markdown(results(skipped, ran), {}));
    expect(systemsOf(method)).toEqual(['naive Express proxy', 'http.request + pipeline()', 'tidegate passthrough', 'tidegate OpenAI route']);
  });

  it('names the skipped baselines and why, in one line', () => {
    const page = markdown(results(skipped, ran), {});
    const lines = page.split('\n').filter((l) => /nginx/.test(l));
    expect(lines).toEqual([`Not run: "nginx" and "nginx, sndbuf=64k": ${NGINX_WHY}.`]);
    expect(methodOf(page)).toContain(lines[0]);
  });

  it('says nothing is skipped when every listed system ran', () => {
    const method = methodOf(markdown(results([], [...ran, 'nginx', 'nginx-sndbuf64k']), {}));
    expect(systemsOf(method)).toContain('nginx, sndbuf=64k');
    expect(method).not.toContain('Not run:');
    expect(method).toContain('(nginx: master + worker)');
  });
});
