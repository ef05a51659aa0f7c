import express from 'express';
import { sendFlow, sse } from '../../src/express';
import { createFlow, fromIterable, type FlowSink } from '../../src/flow';
import type { SseEventInit } from '../../src/sse';
import { listen, RawClient, waitFor } from '../harness/net';

/** The Express demand bridge against elements it cannot encode and clients that barely read. */

const closers: (() => Promise<void>)[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  for (const close of closers.splice(0)) await close();
});

async function serve(app: express.Express): Promise<number> {
  const server = await listen(app);
  closers.push(server.close);
  return server.port;
}

describe('sse() bridge with an element the encoder refuses', () => {
  // An element whose id or event contains CR/LF makes encodeSse throw (the injection guard). The
  // bridge catches it in onNext, cancels the source and ends the stream with event: error: left
  // to unwind into the source's emission, it would wedge createFlow's drain loop, or kill the
  // process as an uncaught exception from a timer or socket handler, and never end the response.
  it('an id with a newline ends the stream with event: error instead of throwing into the source', async () => {
    let sink!: FlowSink<SseEventInit>;
    let thrown: unknown;
    let cancelled = false;
    const app = express();
    app.get(
      '/s',
      sse(() =>
        createFlow<SseEventInit>((s) => {
          sink = s;
          s.onCancel(() => (cancelled = true));
        }),
      ),
    );
    const port = await serve(app);
    const c = await RawClient.request(port, '/s');
    clients.push(c);
    c.readAll();
    await waitFor(() => sink !== undefined && /\r\n\r\n/.test(c.text()));
    try {
      sink.next({ data: 'ok' });
      sink.next({ id: 'a\nevent: injected', data: 'x' });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeUndefined();
    expect(await c.waitClosed(2000)).toBe(true);
    expect(c.body()).toMatch(/event: error\n/);
    expect(c.body()).not.toMatch(/event: injected/);
    expect(cancelled).toBe(true);
  });

  // The sync path: with a synchronous source the bad element is pulled inside sendFlow() itself;
  // a throw there would land in sse()'s promise chain as an unhandled rejection (Node's default:
  // the gateway process exits).
  it('sendFlow with a sync source emitting an event with CRLF does not throw and ends with event: error', async () => {
    let thrown: unknown;
    const app = express();
    app.get('/s', (_req, res) => {
      try {
        sendFlow(res, fromIterable<SseEventInit>([{ data: 'ok' }, { event: 'x\r\ndata: injected', data: 'y' }]));
      } catch (err) {
        thrown = err;
        res.destroy();
      }
    });
    const port = await serve(app);
    const c = await RawClient.request(port, '/s');
    clients.push(c);
    c.readAll();
    await c.waitClosed(2000);
    expect(c.text()).not.toContain('data: injected');
    expect(thrown).toBeUndefined();
    expect(c.body()).toMatch(/event: error\n/);
  });
});
