import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { authHeaders, sendUntyped } from './support/http';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';

const COMMITTED_DOCUMENT = path.join(ROOT, 'libs/api-client/openapi.json');
const COMMITTED_SCHEMA = path.join(ROOT, 'libs/api-client/src/schema.d.ts');

describe('OpenAPI document and generated client', () => {
  let sandbox: Sandbox;
  let manager: TestManager;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('serves the document generated from the controllers, with method-named operations', async () => {
    const res = await sendUntyped(manager.origin, 'GET', '/api/openapi.json');
    expect(res.status).toBe(200);
    const operations = Object.values(res.json.paths as Record<string, Record<string, { operationId: string }>>).flatMap(
      (p) => Object.values(p).map((o) => o.operationId),
    );
    expect(operations).toEqual(
      expect.arrayContaining([
        'createRequirement',
        'listRequirements',
        'replyToRequirement',
        'listMessages',
        'streamEvents',
        'uploadAttachment',
        'updateConfiguration',
      ]),
    );
    expect(res.json).toEqual(JSON.parse(fs.readFileSync(COMMITTED_DOCUMENT, 'utf8')));
  });

  // Issue 26 item 19: a standard linter's recommended rules (servers, a 4xx answer on every
  // operation, a license…) pass with no error and no warning, so generated clients and explorers
  // see every answer the API really gives.
  it("passes Redocly's recommended lint rules without an error or a warning", async () => {
    const res = await sendUntyped(manager.origin, 'GET', '/api/openapi.json');
    expect(res.status).toBe(200);
    const output = execFileSync(process.execPath, [path.join(ROOT, 'test/support/lint-openapi.mjs')], {
      cwd: ROOT,
      encoding: 'utf8',
      input: JSON.stringify(res.json),
    });
    expect(JSON.parse(output)).toEqual([]);
    // Public routes say so; every other one documents the 401 its authentication answers.
    expect(res.json.paths['/api/health'].get.security).toEqual([]);
    expect(res.json.paths['/api/requirements'].post.responses['401'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ErrorBody',
    });
    expect(res.json.servers).toEqual([
      expect.objectContaining({ url: '/' }),
      expect.objectContaining({ url: 'http://127.0.0.1:4310' }),
    ]);
  });

  it('serves an explorer page at /api/docs', async () => {
    const res = await fetch(`${manager.origin}/api/docs`, { headers: authHeaders(manager.origin, {}) });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('swagger-ui');
  });

  it('has a committed document and client that match the current API (run `npm run client:generate`)', () => {
    const generated = execFileSync(process.execPath, [path.join(ROOT, 'scripts/openapi.js'), '--stdout'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(generated).toBe(fs.readFileSync(COMMITTED_DOCUMENT, 'utf8'));
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'am-client-')), 'schema.d.ts');
    // As `npm run client:generate`: a request field with a default stays optional (openapi-typescript would make it required).
    execFileSync(
      path.join(ROOT, 'node_modules/.bin/openapi-typescript'),
      [COMMITTED_DOCUMENT, '--default-non-nullable=false', '-o', out],
      { cwd: ROOT, stdio: 'ignore' },
    );
    expect(fs.readFileSync(out, 'utf8')).toBe(fs.readFileSync(COMMITTED_SCHEMA, 'utf8'));
  });
});
