import { createLogger } from '../../src/gateway/logger';

describe('createLogger', () => {
  it("writes the lines of one turn of the event loop to stdout in one write, in order", async () => {
    const writes: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    try {
      const logger = createLogger({ level: 'info' });
      logger.info('first', { n: 1 });
      logger.info('second', { n: 2 });
      logger.info('third', { n: 3 });
      expect(writes).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toHaveLength(1);
      const lines = (writes[0] as string).split('\n');
      expect(lines.pop()).toBe('');
      expect(lines.map((l) => (JSON.parse(l) as { message: string; n: number }).message)).toEqual(['first', 'second', 'third']);
    } finally {
      spy.mockRestore();
    }
  });

  it('writes nothing when silent', async () => {
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const logger = createLogger({ silent: true });
      logger.info('nothing');
      await new Promise((resolve) => setImmediate(resolve));
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});
