import type { RunningGateway } from '../../src/gateway/server';
import { sleep, waitFor } from '../harness/net';
import { ask, resumableGateway, type CaptureTransport } from './helpers';

// The drain stops a resumable stream's waits only until its upstream first answered: once it
// streams, a dropped upstream is reconnected through the grace, whether the drain started before
// or after that first answer.
describe.each([
  { when: 'after its first answer', drainFirst: false },
  { when: 'while its first attempt is in flight', drainFirst: true },
])('a resumable stream the drain meets $when', ({ drainFirst }) => {
  let requests = 0;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  let close: () => Promise<void>;
  let release: () => void = () => undefined;

  beforeEach(async () => {
    requests = 0;
    const released = new Promise<void>((r) => (release = r));
    ({ gw, logs, close } = await resumableGateway((req, res) => {
      const n = requests++;
      req.resume();
      if (n === 0) {
        // The first attempt answers once released, sends one event and drops.
        void released.then(() => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('id: 1\ndata: a\n\n');
          setTimeout(() => res.destroy(), 100);
        });
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('id: 2\ndata: b\n\ndata: [DONE]\n\n');
    }));
  });
  afterEach(() => close());

  it('reconnects its dropped upstream within the grace and completes', async () => {
    const answer = ask(gw.port, 'GET', '/events');
    await waitFor(() => requests === 1 && gw.app.gateway.activeStreams === 1);
    let stopped: Promise<void>;
    if (drainFirst) {
      stopped = gw.shutdown(5_000);
      await sleep(50);
      release();
    } else {
      release();
      await sleep(50);
      stopped = gw.shutdown(5_000);
    }
    const got = await answer;
    await stopped;
    expect(requests).toBe(2);
    expect(got.body).toMatch(/data: a\n\n[^]*data: b\n\n[^]*data: \[DONE\]/);
    expect(logs.streams()[0]).toMatchObject({ outcome: 'completed' });
  });
});
