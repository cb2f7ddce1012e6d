import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { RotatingLog, followLog, parseLogSize, tailLog } from './daemon-log';

describe(RotatingLog.name, () => {
  let dir: string;
  let file: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-daemon-log-'));
    file = path.join(dir, 'daemon.log');
  });
  afterEach(() => fs.rmSync(dir, { force: true, recursive: true }));

  it('reads sizes as the configuration writes them', () => {
    expect(['100', '1k', '20m', '1g'].map(parseLogSize)).toEqual([100, 1024, 20 * 1024 ** 2, 1024 ** 3]);
    expect(() => parseLogSize('1t')).toThrow('not a size: 1t');
  });

  it('rotates before a write would pass the size, keeping three old files', () => {
    const sut = new RotatingLog(file, 10);
    for (const line of ['line-1\n', 'line-2\n', 'line-3\n', 'line-4\n', 'line-5\n']) {
      sut.write(line);
    }
    sut.close();
    expect(fs.readdirSync(dir).sort()).toEqual(['daemon.log', 'daemon.log.1', 'daemon.log.2', 'daemon.log.3']);
    expect(['', '.1', '.2', '.3'].map((suffix) => fs.readFileSync(`${file}${suffix}`, 'utf8'))).toEqual([
      'line-5\n',
      'line-4\n',
      'line-3\n',
      'line-2\n',
    ]);
  });

  it('appends to what a previous supervisor wrote', () => {
    fs.writeFileSync(file, 'before\n');
    const sut = new RotatingLog(file, 1024);
    sut.write('after\n');
    sut.close();
    expect(fs.readFileSync(file, 'utf8')).toBe('before\nafter\n');
  });

  it('tails across the rotated files, and says how much of the live one it read', () => {
    const sut = new RotatingLog(file, 14);
    for (let i = 1; i <= 6; i++) {
      sut.write(`line-${i}\n`);
    }
    sut.close();
    expect(tailLog(file, 3)).toEqual({ liveBytes: 14, text: 'line-4\nline-5\nline-6\n' });
    expect(tailLog(file, 0).text).toBe('line-1\nline-2\nline-3\nline-4\nline-5\nline-6\n');
    expect(tailLog(path.join(dir, 'none.log'), 5)).toEqual({ liveBytes: 0, text: '' });
  });

  it('follows what is appended, through a rotation, from where the tail ended', async () => {
    const sut = new RotatingLog(file, 16);
    sut.write('old-line\n');
    const { liveBytes } = tailLog(file, 0);
    let seen = '';
    const stop = new AbortController();
    const following = followLog(file, liveBytes, (chunk) => (seen += chunk.toString()), stop.signal);
    sut.write('new-1\n');
    sut.write('new-2\n'); // rotates: new-1 and old-line go to .1 while the follower may still read them
    sut.write('new-3\n');
    for (let i = 0; i < 100 && !seen.includes('new-3'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    stop.abort();
    await following;
    sut.close();
    expect(seen).toBe('new-1\nnew-2\nnew-3\n');
  });
});
