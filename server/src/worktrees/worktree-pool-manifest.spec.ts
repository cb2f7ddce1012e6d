import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import {
  type PooledCopy,
  emptyPool,
  poolIndexPath,
  poolManifestPath,
  readPoolManifest,
  writePoolManifest,
} from './worktree-pool-manifest';

describe('the prepared worktrees list', () => {
  let dataDirectory: string;
  let worktrees: string;
  const copy = (id: string, over: Partial<PooledCopy> = {}): PooledCopy => ({
    baseRef: 'main',
    baseSha: 'a'.repeat(40),
    id,
    madeAt: '2026-12-07T10:00:00.000Z',
    path: path.join(worktrees, `pool-${id}`),
    recipe: '0123456789abcdef',
    setupAt: '2026-12-07T10:00:30.000Z',
    state: 'ready',
    ...over,
  });

  beforeEach(() => {
    dataDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'pool-data-'));
    worktrees = fs.mkdtempSync(path.join(os.tmpdir(), 'pool-trees-'));
  });

  afterEach(() => {
    fs.rmSync(dataDirectory, { force: true, recursive: true });
    fs.rmSync(worktrees, { force: true, recursive: true });
  });

  it('reads back what it wrote, private to the user, and an absent or broken list as empty', () => {
    expect(readPoolManifest(dataDirectory)).toEqual([]);
    const copies = [copy('0000000a'), copy('0000000b', { setupAt: null, state: 'filling' })];
    writePoolManifest(dataDirectory, copies);
    expect(readPoolManifest(dataDirectory)).toEqual(copies);
    expect(fs.statSync(poolManifestPath(dataDirectory)).mode & 0o777).toBe(0o600);
    fs.writeFileSync(poolManifestPath(dataDirectory), '{"not": "a list"');
    expect(readPoolManifest(dataDirectory)).toEqual([]);
  });

  it('keeps only well-formed entries: a folder named after its id, absolute, in a known state', () => {
    const good = copy('0000000c');
    fs.writeFileSync(
      poolManifestPath(dataDirectory),
      JSON.stringify([
        good,
        copy('0000000d', { path: '/home/person/project' }),
        copy('0000000e', { path: 'relative/pool-0000000e' }),
        copy('../../etc'),
        copy('0000000f', { state: 'taken' as PooledCopy['state'] }),
        null,
        'pool-00000010',
      ]),
    );
    expect(readPoolManifest(dataDirectory)).toEqual([good]);
  });

  it('empties the pool: every listed folder and index, then the list, and nothing unlisted', async () => {
    const listed = copy('00000011');
    fs.mkdirSync(path.join(listed.path, '.git'), { recursive: true });
    fs.mkdirSync(path.dirname(poolIndexPath(dataDirectory, listed.id)), { recursive: true });
    fs.writeFileSync(poolIndexPath(dataDirectory, listed.id), 'index');
    const someoneElses = path.join(worktrees, 'a1b2c3d4');
    fs.mkdirSync(someoneElses);
    writePoolManifest(dataDirectory, [listed]);
    expect(await emptyPool(dataDirectory)).toEqual([listed.path]);
    expect(fs.existsSync(listed.path)).toBe(false);
    expect(fs.existsSync(poolIndexPath(dataDirectory, listed.id))).toBe(false);
    expect(fs.existsSync(poolManifestPath(dataDirectory))).toBe(false);
    expect(fs.existsSync(someoneElses)).toBe(true);
    expect(await emptyPool(dataDirectory)).toEqual([]);
  });
});
