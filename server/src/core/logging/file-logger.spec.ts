import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { FileLogger } from './file-logger';

describe('FileLogger', () => {
  it('after close, a late line goes to stderr instead of throwing out of the ended stream', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-log-'));
    const logger = new FileLogger({ filePath: path.join(dir, 'manager.log'), level: 'info', maxFiles: '2', maxSize: '1m' });
    const written: string[] = [];
    const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      logger.log('before the close');
      await logger.close();
      expect(() => logger.warn({ err: 'late', msg: 'model catalog refresh failed' })).not.toThrow();
      // An 'error' event on the ended stream would surface on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      spy.mockRestore();
      fs.rmSync(dir, { force: true, recursive: true });
    }
    expect(written.map((line) => JSON.parse(line) as { level: string; note: string })).toEqual([expect.objectContaining({ level: 'warn', note: 'logged after the log closed' })]);
  });
});
