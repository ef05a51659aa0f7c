/**
 * `TCP_NOTSENT_LOWAT` set once on a listening socket: accepted sockets inherit it, the bridge's
 * per-stream bound then makes no `setsockopt()` for the same value, and still sets another one.
 */
import { existsSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { boundKernelUnsent, boundListenerUnsent } from '../../../src/express/bridge/kernel-unsent';
import * as socketOptions from '../../../src/http/socket-options';

const { getSocketOption, socketOptionsUnavailable } = socketOptions;
const BUILT = existsSync(path.join(__dirname, '..', '..', '..', 'native', 'socket-options', 'build', 'Release', 'socket_options.node'));
const required = process.platform === 'linux' && (BUILT || process.env.CI === 'true');
if (!required) process.stderr.write(`listener kernelUnsentBytes specs skipped: socket options addon not built (${socketOptionsUnavailable() ?? 'not Linux'})\n`);

async function accept(server: net.Server): Promise<{ accepted: net.Socket; client: net.Socket }> {
  const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.on('error', () => undefined);
  const accepted = await new Promise<net.Socket>((r) => server.once('connection', r));
  return { accepted, client };
}

(required ? describe : describe.skip)('boundListenerUnsent', () => {
  let server: net.Server;
  const sockets: net.Socket[] = [];
  beforeEach(async () => {
    server = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('gives every accepted socket the bound, and the bridge sets the same value no more', async () => {
    expect(boundListenerUnsent(server, 12 * 1024)).toBe(true);
    const set = jest.spyOn(socketOptions, 'setSocketOption');
    for (let i = 0; i < 3; i++) {
      const { accepted, client } = await accept(server);
      sockets.push(client);
      expect(getSocketOption(accepted, 'notsentLowat')).toBe(12 * 1024);
      boundKernelUnsent(accepted, 12 * 1024);
      expect(getSocketOption(accepted, 'notsentLowat')).toBe(12 * 1024);
    }
    expect(set).not.toHaveBeenCalled();
  });

  it('still sets another value on an accepted socket, and the listener value again after it', async () => {
    expect(boundListenerUnsent(server, 12 * 1024)).toBe(true);
    const { accepted, client } = await accept(server);
    sockets.push(client);
    const set = jest.spyOn(socketOptions, 'setSocketOption');
    boundKernelUnsent(accepted, 4096);
    expect(getSocketOption(accepted, 'notsentLowat')).toBe(4096);
    // A later stream on the same connection with the listener's value must not trust the inheritance.
    boundKernelUnsent(accepted, 12 * 1024);
    expect(getSocketOption(accepted, 'notsentLowat')).toBe(12 * 1024);
    expect(set).toHaveBeenCalledTimes(2);
  });

  it('does nothing for 0', async () => {
    expect(boundListenerUnsent(server, 0)).toBe(false);
    const { accepted, client } = await accept(server);
    sockets.push(client);
    expect(getSocketOption(accepted, 'notsentLowat')).not.toBe(12 * 1024);
  });
});
