import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';

function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ body: Buffer.concat(chunks), headers: res.headers, status: res.statusCode ?? 0 }),
        );
      })
      .on('error', reject);
  });
}

/** The dashboard's files as a browser gets them: gzipped, hashed ones cached for good, deep links to index.html. */
describe('dashboard assets', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  const built = path.join(ROOT, 'dist', 'dashboard', 'browser');

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('serves hashed scripts gzipped and immutable, the same bytes as the build', async () => {
    const index = await get(`${manager.origin}/`);
    expect(index.status).toBe(200);
    expect(index.headers['cache-control']).toBe('no-cache');
    const main = /src="\/?(main-[A-Z0-9]{8}\.js)"/.exec(index.body.toString())?.[1];
    expect(main).toBeDefined();
    const raw = fs.readFileSync(path.join(built, main as string));

    const zipped = await get(`${manager.origin}/${main}`, { 'Accept-Encoding': 'gzip, deflate, br' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers).toMatchObject({
      'cache-control': 'public, max-age=31536000, immutable',
      'content-encoding': 'gzip',
      vary: 'Accept-Encoding',
    });
    expect(zipped.headers['content-type']).toMatch(/javascript/);
    expect(zlib.gunzipSync(zipped.body).equals(raw)).toBe(true);
    expect(zipped.body.length).toBeLessThan(raw.length / 2);

    const plain = await get(`${manager.origin}/${main}`);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.equals(raw)).toBe(true);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });

  it('sends deep links to index.html, and nothing outside the build', async () => {
    expect((await get(`${manager.origin}/requirements/req_x`)).body.toString()).toContain('<am-root');
    const escape = await get(`${manager.origin}/..%2F..%2Fpackage.json`, { 'Accept-Encoding': 'gzip' });
    expect(escape.body.toString()).not.toContain('"name": "agent-manager"');
  });
});
