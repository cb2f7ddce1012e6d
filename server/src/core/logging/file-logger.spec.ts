import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { FileLogger } from './file-logger';

describe('FileLogger', () => {
  it('after close, a late line goes to stderr instead of throwing out of the ended stream', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-log-'));
    const logger = new FileLogger({
      filePath: path.join(dir, 'manager.log'),
      level: 'info',
      maxFiles: '2',
      maxSize: '1m',
    });
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
    expect(written.map((line) => JSON.parse(line) as { level: string; note: string })).toEqual([
      expect.objectContaining({ level: 'warn', note: 'logged after the log closed' }),
    ]);
  });

  it('writes the entries its level lets through, and follows a level changed while running', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-log-'));
    try {
      const logger = new FileLogger({
        filePath: path.join(dir, 'manager.log'),
        level: 'warn',
        maxFiles: '2',
        maxSize: '1m',
      });
      logger.log({ msg: 'message delivered', requirementId: 'req_1' });
      logger.debug('debug detail');
      logger.warn({ msg: 'request refused' });
      logger.error('write failed', 'stack', 'Database');
      logger.setLevel('info');
      logger.log({ msg: 'run succeeded' });
      logger.debug('still below');
      // The rotating file is written asynchronously: wait until the last entry is there.
      const read = (): Array<{ level: string; message: string }> => {
        const file = fs.readdirSync(dir).find((name) => /^manager-.*\.log$/.test(name));
        const text = file === undefined ? '' : fs.readFileSync(path.join(dir, file), 'utf8').trim();
        return text === ''
          ? []
          : text.split('\n').map((line) => JSON.parse(line) as { level: string; message: string });
      };
      for (let i = 0; i < 100 && !read().some((line) => line.message === 'run succeeded'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const lines = read();
      await logger.close();
      expect(lines.map((line) => [line.level, line.message])).toEqual([
        ['warn', 'request refused'],
        ['error', 'write failed'],
        ['info', 'run succeeded'],
      ]);
    } finally {
      fs.rmSync(dir, { force: true, recursive: true });
    }
  });
});
