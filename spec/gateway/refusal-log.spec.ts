import Transport from 'winston-transport';
import { createLogger } from '../../src/gateway/logger';
import { RefusalLog } from '../../src/gateway/refusal-log';

class Lines extends Transport {
  readonly lines: Record<string, unknown>[] = [];
  override log(info: Record<string, unknown>, next: () => void): void {
    this.lines.push(info);
    next();
  }
}

const refusal = (errorCode = 'ERR_TIDEGATE_OVER_CAPACITY') => ({ route: '/v1/chat/completions', method: 'POST', status: 503, errorCode, reason: 'streams' });

describe('RefusalLog', () => {
  let clock = 0;
  let out: Lines;
  let log: RefusalLog;
  beforeEach(() => {
    clock = 0;
    out = new Lines();
    log = new RefusalLog(createLogger({ transports: [out] }), 3, () => clock);
  });
  afterEach(() => log.flush());

  it('writes one refused line per refusal up to linesPerSecond', () => {
    for (let i = 0; i < 3; i++) log.log(refusal());
    expect(out.lines.map((l) => l.message)).toEqual(['refused', 'refused', 'refused']);
    expect(out.lines[0]).toMatchObject({ level: 'info', ...refusal() });
  });

  it('counts refusals past the cap by code and writes them as one line at flush', () => {
    for (let i = 0; i < 5; i++) log.log(refusal());
    log.log(refusal('ERR_TIDEGATE_CLIENT_LIMIT'));
    expect(out.lines).toHaveLength(3);
    log.flush();
    expect(out.lines.at(-1)).toMatchObject({ message: 'refusals suppressed', count: 3, byCode: { ERR_TIDEGATE_OVER_CAPACITY: 2, ERR_TIDEGATE_CLIENT_LIMIT: 1 }, windowMs: 1000 });
    log.flush();
    expect(out.lines).toHaveLength(4);
  });

  it('sums a window up as the next one starts, then writes lines again', () => {
    for (let i = 0; i < 4; i++) log.log(refusal());
    clock = 1000;
    log.log(refusal());
    expect(out.lines.map((l) => l.message)).toEqual(['refused', 'refused', 'refused', 'refusals suppressed', 'refused']);
    expect(out.lines[3]).toMatchObject({ count: 1 });
  });

  it('writes the summary when the window ends, with no refusal after it', async () => {
    const real = new RefusalLog(createLogger({ transports: [out] }), 1);
    real.log(refusal());
    real.log(refusal());
    await new Promise((r) => setTimeout(r, 1100));
    expect(out.lines.map((l) => l.message)).toEqual(['refused', 'refusals suppressed']);
  });

  it('cuts a long path', () => {
    log.log({ ...refusal(), route: `/${'x'.repeat(1000)}` });
    expect(String(out.lines[0]!.route)).toHaveLength(200);
  });
});
