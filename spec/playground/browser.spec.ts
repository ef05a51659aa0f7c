import os from 'node:os';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startPlayground, type Playground } from './helpers';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
// The docs' screenshots are refreshed only on request (TIDEGATE_UPDATE_SCREENSHOT=1), so a test
// run leaves the working tree clean; otherwise the pictures go to the temp folder.
function screenshotPath(name: string): string {
  return process.env.TIDEGATE_UPDATE_SCREENSHOT === '1'
    ? path.join(__dirname, '..', '..', 'docs', 'img', `${name}.png`)
    : path.join(os.tmpdir(), `tidegate-${name}-${process.pid}.png`);
}
// Without Chromium the tests are skipped with a warning on a developer machine (so the README's
// `npm ci && npm test` works on a fresh one) but fail in CI (CI=true), where .ci/run installs it.
const missingBrowser = !existsSync(CHROMIUM) && process.env.CI !== 'true';
if (missingBrowser) {
  process.stderr.write(`playground browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)\n`);
}
const skip = process.env.TIDEGATE_SKIP_BROWSER === '1' || missingBrowser;

/** Where the page's layout breaks, as facts read from the DOM; every list empty when it holds. */
interface LayoutFacts {
  /** The document is wider than the viewport (horizontal scrolling). */
  pageScrollsSideways: boolean;
  /** Pairs of cards (scenario forms, run panels, planner) whose boxes intersect. */
  overlappingCards: string[];
  /** Cards reaching past the viewport's right edge. */
  cardsOutside: string[];
  /** Columns and cells whose content is wider than their box (clipped or spilling over). */
  clipped: string[];
}

function layoutFacts(page: Page): Promise<LayoutFacts> {
  return page.evaluate(() => {
    const name = (e: Element): string => {
      const slot = e.closest('[data-slot]')?.getAttribute('data-slot');
      return `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${(e.getAttribute('class') ?? '').replace(/ /g, '.')}${slot ? `[${slot}]` : ''}`;
    };
    const cards = Array.from(document.querySelectorAll('.scenarios fieldset:not([hidden]), .run, .planner'));
    const boxes = cards.map((c) => c.getBoundingClientRect());
    const overlappingCards: string[] = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i];
        const b = boxes[j];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 0.5 && h > 0.5) overlappingCards.push(`${name(cards[i])} × ${name(cards[j])}`);
      }
    }
    const width = document.documentElement.clientWidth;
    const cardsOutside = cards.filter((c, i) => boxes[i].right > width + 0.5 || boxes[i].left < -0.5).map(name);
    const columns = document.querySelectorAll('.run, .lower > div, .notes, .received, .figures > div, .chart, .stages td, .stages th, .planner .out > div, .planner .live td');
    const clipped = Array.from(columns).filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => `${name(e)} ${e.scrollWidth} > ${e.clientWidth}`);
    return { pageScrollsSideways: document.documentElement.scrollWidth > width, overlappingCards, cardsOutside, clipped };
  });
}

const HOLDS: LayoutFacts = { pageScrollsSideways: false, overlappingCards: [], cardsOutside: [], clipped: [] };

(skip ? describe.skip : describe)('playground in headless Chromium', () => {
  let browser: Browser | undefined;
  let pg: Playground | undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is missing at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (.ci/run does), ` +
          'or set TIDEGATE_SKIP_BROWSER=1 to skip the browser tests.',
      );
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    await pg?.close();
    pg = undefined;
  });

  /** A page of the playground at `width` px, ready; page errors are collected in `errors`. */
  async function open(width: number, context: Browser | BrowserContext = browser!): Promise<{ page: Page; errors: string[]; requests: string[] }> {
    const page = await context.newPage({ viewport: { width, height: 900 } });
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.goto(pg!.url);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 10_000 });
    return { page, errors, requests };
  }

  async function screenshot(page: Page, name: string): Promise<void> {
    const file = screenshotPath(name);
    mkdirSync(path.dirname(file), { recursive: true });
    await page.screenshot({ path: file, fullPage: true });
  }

  it("shows a stalled client's stream terminated with the buffered bytes never past the budget, at 1280 px", async () => {
    pg = await startPlayground();
    const { page, errors } = await open(1280);
    try {
      await page.click('[data-preset="stalled-terminate"]');
      expect(await page.isChecked('#a-stalled')).toBe(true);
      expect(await page.inputValue('#a-overflow')).toBe('terminate');
      await page.click('#start');

      const run = page.locator('.run[data-slot="a"]');
      await page.waitForSelector('.run[data-slot="a"][data-state="finished"]', { timeout: 20_000 });
      expect(await run.locator('.status').getAttribute('data-outcome')).toBe('overflow');
      expect(await run.locator('.status').textContent()).toContain('ERR_TIDEGATE_OVERFLOW');
      const notes = await run.locator('.notes li[data-kind="overflow"]').allTextContents();
      expect(notes.join('\n')).toContain("'terminate'");

      const chart = run.locator('[data-chart="held"]');
      const budget = Number(await chart.getAttribute('data-budget'));
      const peak = Number(await chart.getAttribute('data-peak'));
      const samples = Number(await chart.getAttribute('data-samples'));
      expect(budget).toBe(64 * 1024);
      expect(samples).toBeGreaterThan(2);
      expect(peak).toBeGreaterThan(0); // it did fill up …
      expect(peak).toBeLessThanOrEqual(budget); // … and never passed the budget
      expect(Number(await run.getAttribute('data-peak-held'))).toBeLessThanOrEqual(budget); // the server's exact peak

      // The planner's live row has both the estimate and the measured time to overflow.
      expect(await page.locator('[data-live="a"] [data-measured-s]').getAttribute('data-measured-s')).not.toBe('');
      expect(await layoutFacts(page)).toEqual(HOLDS);
      expect(errors).toEqual([]);
      await screenshot(page, 'playground');
    } finally {
      await page.close();
    }
  });

  it('stacks the cards at 390 px without overlap, clipping or sideways scrolling', async () => {
    pg = await startPlayground();
    const { page, errors } = await open(390);
    try {
      await page.click('[data-preset="stalled-terminate"]');
      await page.click('#start');
      await page.waitForSelector('.run[data-slot="a"][data-state="finished"]', { timeout: 20_000 });
      expect(await layoutFacts(page)).toEqual(HOLDS);
      // One column: the run panel sits below the form, as wide as it.
      const form = (await page.locator('#scenario-a').boundingBox())!;
      const panel = (await page.locator('.run[data-slot="a"]').boundingBox())!;
      expect(panel.y).toBeGreaterThanOrEqual(form.y + form.height);
      expect(Math.abs(panel.width - form.width)).toBeLessThan(2);
      expect(errors).toEqual([]);
      await screenshot(page, 'playground-phone');
    } finally {
      await page.close();
    }
  });

  it('says what is wrong in the label and unit the user typed in, and disables controls that do not apply', async () => {
    pg = await startPlayground();
    const { page, errors, requests } = await open(390);
    try {
      const budget = page.locator('#a-budget');
      expect([await budget.getAttribute('min'), await budget.getAttribute('max')]).toEqual(['32', '4096']);
      expect([await page.getAttribute('#a-producer', 'min'), await page.getAttribute('#a-producer', 'max')]).toEqual(['1', '5000']);
      await budget.fill('16');
      await page.click('#start');
      const message = await page.locator('#message').textContent();
      expect(message).toBe('Scenario A · Stream budget: between 32 and 4096 KiB (you typed 16 KiB)');
      expect(await budget.getAttribute('aria-invalid')).toBe('true');
      expect(requests.filter((r) => r.startsWith('POST'))).toEqual([]); // nothing was sent

      // Drop and Latest have no buffer: its bound and overflow strategy are disabled.
      await page.selectOption('#a-strategy', 'drop');
      expect(await page.isDisabled('#a-overflow')).toBe(true);
      expect(await page.isDisabled('#a-bounded')).toBe(true);
      await page.selectOption('#a-strategy', 'buffer');
      await page.check('#a-bounded');
      expect(await page.isDisabled('#a-overflow')).toBe(false);
      await page.uncheck('#a-bounded'); // an unbounded buffer never overflows
      expect(await page.isDisabled('#a-overflow')).toBe(true);
      // A stalled client reads nothing: its rate is disabled.
      await page.check('#a-stalled');
      expect(await page.isDisabled('#a-consumer')).toBe(true);
      await page.uncheck('#a-stalled');
      expect(await page.isDisabled('#a-consumer')).toBe(false);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('compare mode: side by side at 1280 px, nothing clipped; the unbounded preset reaches the 8 MiB demo cap', async () => {
    pg = await startPlayground();
    const { page, errors } = await open(1280);
    try {
      await page.click('[data-preset="unbounded-vs-budget"]');
      await page.click('#start');
      await page.waitForSelector('.run[data-slot="b"][data-state="finished"]', { timeout: 20_000 });
      await page.waitForSelector('.run[data-slot="a"][data-state="finished"]', { timeout: 40_000 });
      const a = page.locator('.run[data-slot="a"]');
      expect(await a.locator('.status').getAttribute('data-outcome')).toBe('demo-cap');
      expect(Number(await a.getAttribute('data-peak-held'))).toBeGreaterThan(8 * 1024 * 1024);
      const b = page.locator('.run[data-slot="b"]');
      expect(await b.locator('.status').getAttribute('data-outcome')).toBe('overflow');
      expect(Number(await b.getAttribute('data-peak-held'))).toBeLessThanOrEqual(64 * 1024);
      const [boxA, boxB] = [(await a.boundingBox())!, (await b.boundingBox())!];
      expect(boxB.x).toBeGreaterThanOrEqual(boxA.x + boxA.width); // beside, not below
      expect(await layoutFacts(page)).toEqual(HOLDS);
      expect(errors).toEqual([]);
      await screenshot(page, 'playground-compare');
    } finally {
      await page.close();
    }
  }, 60_000);

  it('runs compare mode in a second tab while the first one runs, on one connection per page', async () => {
    pg = await startPlayground();
    const context = await browser!.newContext(); // tabs of one profile share its six connections per host
    try {
      const first = await open(1280, context);
      await first.page.click('[data-preset="pause-vs-drop"]'); // two 20 s runs
      await first.page.click('#start');
      await first.page.waitForSelector('.run[data-slot="b"][data-state="running"]', { timeout: 10_000 });

      const second = await open(390, context);
      await second.page.click('[data-preset="error-vs-terminate"]');
      await second.page.fill('#a-duration', '2');
      await second.page.fill('#b-duration', '2');
      await second.page.click('#start');
      for (const slot of ['a', 'b']) {
        await second.page.waitForSelector(`.run[data-slot="${slot}"][data-state="finished"]`, { timeout: 15_000 });
        expect(Number(await second.page.getAttribute(`.run[data-slot="${slot}"] .received`, 'data-received'))).toBeGreaterThan(0);
      }
      expect(await first.page.getAttribute('.run[data-slot="a"]', 'data-state')).toBe('running');
      expect(await layoutFacts(second.page)).toEqual(HOLDS); // compare mode at 390 px: stacked

      for (const tab of [first, second]) {
        const streams = tab.requests.filter((r) => r.startsWith('GET') && /\/(watch|runs\/[^/]+\/(stream|telemetry))$/.test(r));
        expect(streams).toEqual(['GET /playground/watch']);
        expect(tab.errors).toEqual([]);
      }
      await first.page.click('#stop');
      await first.page.waitForSelector('.run[data-slot="a"][data-state="finished"]', { timeout: 10_000 });
    } finally {
      await context.close();
    }
  }, 60_000);
});
