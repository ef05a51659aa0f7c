import http from 'node:http';
import net from 'node:net';
import { readRequestBody, RequestBodyAbortedError } from '../../src/gateway/request-body';

// A request answered before its body ended (a refusal) is read on while its connection stays
// open; once the connection closes, the read ends too. Node emits no 'close' on such a request.

describe('readRequestBody when the connection closes after the answer', () => {
  it('ends the read with RequestBodyAbortedError, its timer cleared, once the client closes', async () => {
    let read: Promise<unknown> | undefined;
    const server = http.createServer((req, res) => {
      read = readRequestBody(req, { maxBytes: 1 << 20, timeoutMs: 60_000 }).then(
        () => 'resolved',
        (err: unknown) => err,
      );
      // Answered (and kept open) while the body is still arriving, as a drain refusal is.
      res.writeHead(503, { 'Content-Length': '0' });
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"half":');
      let answer = '';
      socket.setEncoding('utf8');
      await new Promise<void>((r) => socket.on('data', (c: string) => (answer += c) && answer.includes('\r\n\r\n') && r()));
      expect(answer).toMatch(/^HTTP\/1\.1 503 /);
      socket.destroy();
      const outcome = await Promise.race([read, new Promise((r) => setTimeout(() => r('still reading'), 2000).unref())]);
      expect(outcome).toBeInstanceOf(RequestBodyAbortedError);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
