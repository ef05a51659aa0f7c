import http from 'node:http';
import { listen, sleep } from '../harness/net';
import { PacedResponse } from '../../src/playground/paced-response';

type Server = Awaited<ReturnType<typeof listen>>;
let server: Server | undefined;
let paced: PacedResponse | undefined;
afterEach(async () => {
  paced?.destroy();
  paced = undefined;
  await server?.close();
  server = undefined;
});

/** A server whose only response is handed to `use`; returns the client's body text once it ends. */
async function withResponse(use: (res: http.ServerResponse) => void): Promise<{ body: Promise<string> }> {
  server = await listen((_req, res) => use(res));
  return { body: fetch(server.url).then((r) => r.text()) };
}

describe('PacedResponse', () => {
  it('returns false from write() above its 16 KiB high-water mark while the client is stalled', async () => {
    const ready = new Promise<PacedResponse>((resolve) => {
      // afterEach destroys the stalled response: the client then sees a reset, by design.
      void withResponse((res) => resolve((paced = new PacedResponse(res, 0)))).then(({ body }) => body.catch(() => ''));
    });
    const p = await ready;
    expect(p.write(Buffer.alloc(10 * 1024))).toBe(true);
    expect(p.write(Buffer.alloc(10 * 1024))).toBe(false);
    await sleep(150);
    expect(p.writableLength).toBe(20 * 1024);
    expect(p.consumedBytes).toBe(0);
  });

  it('passes the bytes to the real response in order and ends it', async () => {
    const { body } = await withResponse((res) => {
      paced = new PacedResponse(res, 1024 * 1024);
      paced.setHeader('Content-Type', 'text/plain');
      paced.write('one,');
      paced.write(Buffer.from('two,'));
      paced.end('three');
    });
    expect(await body).toBe('one,two,three');
  });

  it('ends the real response when abandoned, dropping what the client did not read', async () => {
    const { body } = await withResponse((res) => {
      paced = new PacedResponse(res, 0);
      paced.write('never read');
      setTimeout(() => paced?.abandon(), 50);
    });
    expect(await body).toBe('');
  });
});
