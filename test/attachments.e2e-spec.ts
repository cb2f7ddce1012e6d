import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { authHeaders, sendUntyped } from './support/http';
import { execute, query, snapshotStore } from './support/db-snapshot';
import { expectRefused as refused } from './support/refusals';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { settled } from './support/git-repo';
import { until } from './support/wait';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(64)]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), crypto.randomBytes(64)]);
const GIF = Buffer.concat([Buffer.from('GIF89a'), crypto.randomBytes(64)]);
const WEBP = Buffer.concat([
  Buffer.from('RIFF'),
  Buffer.from([0x10, 0, 0, 0]),
  Buffer.from('WEBPVP8 '),
  crypto.randomBytes(64),
]);
const TEXT = Buffer.from('plain notes\n');

describe('Attachments', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let requirementId: string;

  const upload = (
    body: Buffer | string,
    fileName: string | undefined,
    headers: Record<string, string> = {},
    id = requirementId,
  ) =>
    // Content types, file names and bodies as sent on the wire, bad ones included: untyped on purpose.
    sendUntyped(manager.origin, 'POST', `/api/requirements/${id}/attachments`, body, {
      'Content-Type': 'application/octet-stream',
      ...(fileName === undefined ? {} : { 'X-File-Name': fileName }),
      ...headers,
    });
  const newRequirement = async () =>
    (await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'attachments' } }))).id;
  const expectRefused = (request: Parameters<typeof refused>[1], status: number, code?: string) =>
    refused(manager.dataDirectory(), request, status, code);

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
    requirementId = await newRequirement();
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it.each([
    ['PNG', PNG, 'image', 'image/png'],
    ['JPEG', JPEG, 'image', 'image/jpeg'],
    ['GIF', GIF, 'image', 'image/gif'],
    ['WebP', WEBP, 'image', 'image/webp'],
  ])('recognises a %s by its signature whatever its name says', async (_name, bytes, kind, mediaType) => {
    const res = await upload(bytes, encodeURIComponent('screen shot.txt'), { 'Content-Type': 'text/plain' });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      byteSize: bytes.length,
      fileName: 'screen shot.txt',
      kind,
      mediaType,
      messageId: null,
      requirementId,
    });
    expect(res.json.id).toMatch(/^att_/);
  });

  it('treats a file that only claims to be an image as a plain file', async () => {
    const res = await upload(TEXT, 'fake.png', { 'Content-Type': 'image/png' });
    expect(res.json).toMatchObject({ kind: 'file', mediaType: 'application/octet-stream' });
  });

  it('stores a JSON file as bytes rather than parsing it', async () => {
    const res = await upload('{"not": "a request"}', 'data.json', { 'Content-Type': 'application/json' });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ byteSize: 20, kind: 'file', mediaType: 'application/json' });
  });

  it('keeps a unicode name (URI-encoded) intact', async () => {
    const res = await upload(TEXT, encodeURIComponent('设计稿 v2.md'));
    expect(res.json.fileName).toBe('设计稿 v2.md');
  });

  it('refuses an upload over 20 MB with 400 and leaves no partial file', async () => {
    const big = Buffer.alloc(21 * 1024 * 1024, 1);
    await expectRefused(() => upload(big, 'big.bin'), 400, 'attachment_too_large');
  });

  it('refuses a streamed upload that passes 20 MB without a Content-Length', async () => {
    const before = await snapshotStore(manager.dataDirectory());
    const chunk = Buffer.alloc(1024 * 1024, 2);
    let sent = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (sent >= 21) {
          controller.close();
          return;
        }
        sent++;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${manager.origin}/api/requirements/${requirementId}/attachments`, {
      body,
      duplex: 'half',
      headers: authHeaders(manager.origin, { 'X-File-Name': 'stream.bin' }),
      method: 'POST',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('attachment_too_large');
    expect(await snapshotStore(manager.dataDirectory())).toEqual(before);
  });

  it.each([
    ['an empty body', '', 'a.txt', 400, 'attachment_empty'],
    ['no X-File-Name', TEXT, undefined, 400, 'file_name_required'],
    ['a path traversal name', TEXT, '../../etc/passwd', 400, 'invalid_file_name'],
    ['an encoded traversal name', TEXT, encodeURIComponent('..\\..\\boot.ini'), 400, 'invalid_file_name'],
    ['a name that is ..', TEXT, '..', 400, 'invalid_file_name'],
    ['a control character', TEXT, encodeURIComponent('a\u0000b.txt'), 400, 'invalid_file_name'],
    ['a newline', TEXT, encodeURIComponent('a\nSet-Cookie: x.txt'), 400, 'invalid_file_name'],
    ['a bidi override', TEXT, encodeURIComponent('invoice\u202Egpj.exe'), 400, 'invalid_file_name'],
    ['broken URI encoding', TEXT, '%E0%A4%A', 400, 'invalid_file_name'],
    ['a 256-character name', TEXT, 'x'.repeat(256), 400, 'invalid_file_name'],
  ])('refuses %s', async (_name, body, fileName, status, code) => {
    await expectRefused(() => upload(body, fileName), status, code);
  });

  it('refuses uploads to unknown or cancelled Requirements', async () => {
    await expectRefused(() => upload(TEXT, 'a.txt', {}, 'req_00000000-0000-0000-0000-000000000000'), 404);
    const cancelled = await newRequirement();
    await manager.api.DELETE('/api/requirements/{id}', { params: { path: { id: cancelled } } });
    await expectRefused(() => upload(TEXT, 'a.txt', {}, cancelled), 409);
  });

  it('attaches up to six uploads to a reply, once each, only on their own Requirement', async () => {
    const id = await newRequirement();
    const uploads: string[] = [];
    for (let i = 0; i < 7; i++) {
      uploads.push((await upload(i % 2 ? PNG : TEXT, `file-${i}.bin`, {}, id)).json.id as string);
    }
    const reply = (body: Schemas['ReplyDto']) =>
      manager.api.POST('/api/requirements/{id}/reply', { body, params: { path: { id } } });
    await expectRefused(() => reply({ attachmentIds: uploads }), 400);
    await expectRefused(() => reply({ attachmentIds: [uploads[0], uploads[0]] }), 400, 'duplicate_attachment');
    const other = await newRequirement();
    await expectRefused(
      () =>
        manager.api.POST('/api/requirements/{id}/reply', {
          params: { path: { id: other } },
          body: { attachmentIds: [uploads[0]] },
        }),
      400,
      'unknown_attachment',
    );

    const accepted = await reply({ attachmentIds: uploads.slice(0, 6) });
    expect(accepted.status).toBe(202);
    const { message } = accepted.data!;
    expect(message.body).toBe('');
    expect(message.attachments.map((a) => a.id)).toEqual(uploads.slice(0, 6));
    expect(message.attachments.every((a) => a.messageId === message.id)).toBe(true);
    await expectRefused(() => reply({ attachmentIds: [uploads[0]], message: 'again' }), 400, 'attachment_already_used');

    const listed = await manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id } } });
    expect(listed.data!.items[0].attachments.map((a) => a.id)).toEqual(uploads.slice(0, 6));

    // The reply started a run: ended here, so that nothing of it (its end, a message saying why)
    // lands in a later test's before-and-after comparison of the whole store.
    await ok(manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id } } }));
    await settled(manager, id, 1);
  });

  it('serves images inline and other files as downloads, never sniffable', async () => {
    const image = (await upload(PNG, 'shot.png')).json;
    const file = (await upload(TEXT, encodeURIComponent('notes "v1".html'), { 'Content-Type': 'text/html' })).json;

    const imageRes = await fetch(`${manager.origin}/api/attachments/${image.id}`, {
      headers: authHeaders(manager.origin, {}),
    });
    expect(imageRes.status).toBe(200);
    expect(Buffer.from(await imageRes.arrayBuffer())).toEqual(PNG);
    expect(imageRes.headers.get('content-type')).toBe('image/png');
    expect(imageRes.headers.get('content-disposition')).toMatch(/^inline; filename="shot.png"/);
    expect(imageRes.headers.get('x-content-type-options')).toBe('nosniff');
    expect(imageRes.headers.get('content-security-policy')).toContain('sandbox');

    const fileRes = await fetch(`${manager.origin}/api/attachments/${file.id}`, {
      headers: authHeaders(manager.origin, {}),
    });
    expect(await fileRes.text()).toBe(TEXT.toString());
    expect(fileRes.headers.get('content-disposition')).toBe(
      `attachment; filename="notes _v1_.html"; filename*=UTF-8''${encodeURIComponent('notes "v1".html')}`,
    );
    expect(fileRes.headers.get('x-content-type-options')).toBe('nosniff');
    expect(fileRes.headers.get('content-security-policy')).toContain("default-src 'none'");

    expect(
      (
        await manager.api.GET('/api/attachments/{id}', {
          params: { path: { id: 'att_00000000-0000-0000-0000-000000000000' } },
        })
      ).status,
    ).toBe(404);
    // Encoded by hand: untyped on purpose.
    expect((await sendUntyped(manager.origin, 'GET', '/api/attachments/..%2F..%2Fconfig.json')).status).toBe(404);
  });

  const attachmentsDirectory = () => path.join(manager.dataDirectory(), 'attachments');
  const dbPath = () => path.join(manager.dataDirectory(), 'factory.sqlite');
  const download = async (id: string) => {
    const res = await fetch(`${manager.origin}/api/attachments/${id}`, { headers: authHeaders(manager.origin, {}) });
    return { bytes: Buffer.from(await res.arrayBuffer()), res };
  };
  /** The attachment's bytes as the database holds them, chunks in order. */
  const storedBytes = async (id: string) =>
    Buffer.concat(
      (
        await query<{ bytes: Buffer }>(
          dbPath(),
          'SELECT bytes FROM attachment_chunk WHERE attachment_id = ? ORDER BY chunk_index',
          [id],
        )
      ).map((r) => Buffer.from(r.bytes)),
    );
  const removeLocalCopies = () => {
    for (const name of fs.readdirSync(attachmentsDirectory())) {
      fs.rmSync(path.join(attachmentsDirectory(), name), { force: true });
    }
  };

  it('keeps the bytes in the database: with every local file gone, a download still serves them, chunk by chunk', async () => {
    // Three chunks (1 MiB each, the last shorter): the download streams them in order.
    const bytes = crypto.randomBytes(2 * 1024 * 1024 + 12345);
    const big = (await upload(bytes, 'trace.bin')).json;
    const image = (await upload(PNG, 'shot.png')).json;
    const [{ n }] = await query<{ n: number | string }>(
      dbPath(),
      'SELECT COUNT(*) AS n FROM attachment_chunk WHERE attachment_id = ?',
      [big.id],
    );
    expect(Number(n)).toBe(3);
    expect((await storedBytes(big.id)).equals(bytes)).toBe(true); // .equals: toEqual on megabytes takes seconds
    expect(await storedBytes(image.id)).toEqual(PNG);

    removeLocalCopies();
    const fromBig = await download(big.id);
    expect(fromBig.res.status).toBe(200);
    expect(fromBig.res.headers.get('content-length')).toBe(String(bytes.length));
    expect(fromBig.bytes.equals(bytes)).toBe(true);
    const fromImage = await download(image.id);
    expect(fromImage.res.headers.get('content-type')).toBe('image/png');
    expect(fromImage.res.headers.get('content-disposition')).toMatch(/^inline; filename="shot.png"/);
    expect(fromImage.bytes).toEqual(PNG);
    expect(fs.readdirSync(attachmentsDirectory())).toEqual([]);
  });

  it('leaves neither row nor bytes nor file of an upload cut off midway', async () => {
    const startedAt = new Date().toISOString();
    const before = await snapshotStore(manager.dataDirectory());
    const url = new URL(`${manager.origin}/api/requirements/${requirementId}/attachments`);
    await new Promise<void>((resolve) => {
      const req = http.request({
        headers: authHeaders(manager.origin, {
          'Content-Length': String(3 * 1024 * 1024),
          'Content-Type': 'application/octet-stream',
          'X-File-Name': 'cut.bin',
        }),
        hostname: url.hostname,
        method: 'POST',
        path: url.pathname,
        port: url.port,
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      // Half the declared body reaches the server, then the connection drops.
      req.write(Buffer.alloc(1536 * 1024, 3), () => setTimeout(() => req.destroy(), 300));
    });
    await until('the cut upload to be cleaned up', async () =>
      fs.readdirSync(attachmentsDirectory()).every((name) => !name.startsWith('.upload-')),
    );
    // Whatever else was written meanwhile is named (a message says what wrote it), not just counted.
    const since = await query(dbPath(), 'SELECT author, body FROM requirement_message WHERE created_at >= ?', [
      startedAt,
    ]);
    expect({ messages: since, store: await snapshotStore(manager.dataDirectory()) }).toEqual({
      messages: [],
      store: before,
    });
  });

  it('reads the file of an attachment from before the bytes were in the database in at start, once, and keeps it as the local copy', async () => {
    const bytes = crypto.randomBytes(1024 * 1024 + 7);
    const old = (await upload(bytes, 'old-notes.txt')).json;
    const lost = (await upload(TEXT, 'lost.txt')).json;
    await manager.stop();
    // As a manager before issue 29 left them: rows, and the bytes only as files named by ID.
    await execute(dbPath(), 'DELETE FROM attachment_chunk WHERE attachment_id IN (?, ?)', [old.id, lost.id]);
    removeLocalCopies();
    fs.writeFileSync(path.join(attachmentsDirectory(), `${old.id}.txt`), bytes);

    manager = await startInProcess({ sandbox });
    expect((await storedBytes(old.id)).equals(bytes)).toBe(true);
    expect(fs.readFileSync(path.join(attachmentsDirectory(), `${old.id}.txt`)).equals(bytes)).toBe(true);
    // The one without a file stays as it was (another manager of a shared database may hold it).
    expect(await storedBytes(lost.id)).toEqual(Buffer.alloc(0));
    expect((await download(lost.id)).res.status).toBe(404);

    // Started again: nothing read in twice, nothing changed.
    const chunks = await query(
      dbPath(),
      'SELECT attachment_id, chunk_index FROM attachment_chunk ORDER BY attachment_id, chunk_index',
    );
    await manager.stop();
    manager = await startInProcess({ sandbox });
    expect(
      await query(
        dbPath(),
        'SELECT attachment_id, chunk_index FROM attachment_chunk ORDER BY attachment_id, chunk_index',
      ),
    ).toEqual(chunks);

    removeLocalCopies();
    expect((await download(old.id)).bytes.equals(bytes)).toBe(true);
  });
});
