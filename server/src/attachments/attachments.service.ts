import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable } from 'node:stream';

import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import { type EventActor, LIMITS } from '@libs/contracts';

import { Clock } from '../core/clock';
import { audit } from '../events/event-log.service';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, insufficientStorage, invalid, notFound } from '../core/errors/domain-error';
import { isId, newId } from '../core/ids';
import { RUNTIME, type Runtime } from '../core/runtime';
import { RequirementsService, requirementNotFound } from '../requirements/requirements.service';
import { ATTACHMENT_CHUNK_BYTES, AttachmentsRepository } from './attachments.repository';
import { AttachmentResponseDto, toAttachmentResponse } from './dto/attachment-response.dto';
import { SIGNATURE_BYTES, classify, storedExtension } from './file-signature';
import { MessageAttachmentEntity } from './message-attachment.entity';

export interface UploadInput {
  body: Readable;
  fileName: string;
  declaredType: string | undefined;
  declaredLength: number | null;
}

/** A file an upload streams into before its bytes are committed. */
const UPLOAD_PREFIX = '.upload-';
/** A local copy being written, before it is renamed into place. */
const COPY_PREFIX = '.copy-';

/**
 * Attachments live in the board's database: a row describes each, `attachment_chunk` holds its
 * bytes, both written in one transaction, so every manager sharing the database serves and
 * delivers them (issue 29). Uploads stream to a temp file with a hard byte limit (never more
 * than the limit in memory), then row and bytes are inserted together, so an aborted or
 * oversized upload leaves nothing behind.
 *
 * Agents read files, so a run is given local copies under the data directory (`<id><ext>` in
 * the attachments directory), written from the database when the run is prepared if missing:
 * a cache, never the truth. Files of attachments from before the bytes were in the database
 * are read in at start (`importFiles`) and then serve as those copies.
 */
@Injectable()
export class AttachmentsService implements OnApplicationBootstrap {
  private readonly logger = new Logger(AttachmentsService.name);

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly repository: AttachmentsRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  /** Temp files of uploads and copies cut short by a crash are removed at start; older files are read in. */
  async onApplicationBootstrap(): Promise<void> {
    for (const name of fs.readdirSync(this.directory)) {
      if (name.startsWith(UPLOAD_PREFIX) || name.startsWith(COPY_PREFIX)) {
        fs.rmSync(path.join(this.directory, name), { force: true });
      }
    }
    await this.importFiles();
  }

  get directory(): string {
    return this.runtime.paths.attachmentsDirectory;
  }

  /** Absolute path of an attachment's local copy (agents read files from here): `<id><ext>`. */
  filePath(attachment: Pick<MessageAttachmentEntity, 'fileName' | 'id' | 'kind' | 'mediaType'>): string {
    return path.join(
      this.directory,
      `${attachment.id}${storedExtension(attachment.kind, attachment.mediaType, attachment.fileName)}`,
    );
  }

  async upload(requirementId: string, input: UploadInput, actor: EventActor): Promise<AttachmentResponseDto> {
    if (input.declaredLength !== null && input.declaredLength > LIMITS.attachmentBytes) {
      throw invalid('attachment_too_large', `an attachment may be at most ${LIMITS.attachmentBytes} bytes`);
    }
    if (input.body.readableEnded) {
      // Read to its end by something else: 'end' would never come again, and the temp file would wait for it forever.
      throw invalid('invalid_body', 'the upload body was already consumed');
    }
    await this.assertAcceptsUploads(requirementId);

    const id = newId('attachment');
    const temp = path.join(this.directory, `${UPLOAD_PREFIX}${id}`);
    const { byteSize, head } = await this.receive(input.body, temp);
    try {
      const { kind, mediaType } = classify(head, input.declaredType);
      // At most the limit: receive() refused anything longer.
      const chunks = toChunks(await fs.promises.readFile(temp));
      const entity = await this.database.write(async (tx) => {
        const { requirement } = await this.requirements.loadForWrite(tx, requirementId);
        if (requirement.status === 'cancelled') {
          throw conflict('requirement_cancelled', `Requirement ${requirementId} is cancelled`);
        }
        const row: MessageAttachmentEntity = {
          byteSize,
          createdAt: this.clock.nowIso(),
          fileName: input.fileName,
          id,
          kind,
          mediaType,
          messageId: null,
          requirementId,
        };
        this.repository.insert(tx, row);
        this.repository.insertContent(tx, id, chunks);
        return row;
      });
      try {
        // Committed: the upload's file is already the local copy a run of this manager would need.
        fs.renameSync(temp, this.filePath(entity));
      } catch {
        // Only a cache: a run writes its copy from the database.
      }
      this.logger.log({ ...audit(actor), attachmentId: id, byteSize, kind, msg: 'attachment uploaded', requirementId });
      return toAttachmentResponse(entity);
    } finally {
      fs.rmSync(temp, { force: true });
    }
  }

  /** For download: the row and a stream of its bytes from the database, one chunk at a time. */
  async open(id: string): Promise<{ attachment: AttachmentResponseDto; stream: Readable }> {
    const row = isId('attachment', id) ? await this.repository.findById(id) : null;
    if (!row) {
      throw notFound('attachment_not_found', `Attachment ${id} not found`);
    }
    const first = await this.repository.chunk(id, 0);
    if (!first) {
      // Uploaded before the bytes were in the database, to a manager that has not read its file in.
      throw notFound('attachment_not_found', `Attachment ${id} has no stored content`);
    }
    return { attachment: toAttachmentResponse(row), stream: Readable.from(this.chunks(row, first)) };
  }

  /**
   * Gives uploaded attachments to a new message. Each ID must be an upload of this Requirement
   * that no message holds yet, and may appear once.
   */
  async claim(
    tx: UnitOfWork,
    requirementId: string,
    ids: string[],
    messageId: string,
  ): Promise<AttachmentResponseDto[]> {
    if (ids.length === 0) {
      return [];
    }
    if (ids.length > LIMITS.attachmentsPerMessage) {
      throw invalid('too_many_attachments', `a message holds at most ${LIMITS.attachmentsPerMessage} attachments`);
    }
    if (new Set(ids).size !== ids.length) {
      throw invalid('duplicate_attachment', 'attachmentIds lists an attachment more than once');
    }
    const rows = await this.repository.findByIdsIn(tx, ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const id of ids) {
      const row = byId.get(id);
      if (!row || row.requirementId !== requirementId) {
        throw invalid('unknown_attachment', `attachment ${id} was not uploaded to Requirement ${requirementId}`);
      }
      if (row.messageId !== null) {
        throw invalid('attachment_already_used', `attachment ${id} already belongs to a message`);
      }
    }
    this.repository.giveToMessage(tx, ids, messageId);
    return ids.map((id) => toAttachmentResponse({ ...(byId.get(id) as MessageAttachmentEntity), messageId }));
  }

  /**
   * The local copies of every attachment a Requirement's agent session has been given, up to
   * message `toSequence`: what its agent may open (its sandbox shows these and no other).
   * Earlier ones count too: a resumed session still has their paths in its conversation. A
   * copy that is missing (or cut short) is written from the database first.
   */
  async deliveredFiles(requirementId: string, toSequence: number): Promise<string[]> {
    const rows = await this.repository.deliveredUpTo(requirementId, toSequence);
    const files: string[] = [];
    for (const row of rows) {
      files.push(await this.localCopy(row));
    }
    return files;
  }

  /**
   * Reads the files of attachments uploaded before their bytes were in the database into it,
   * one attachment per transaction. Re-run at every start until none is left; the files stay
   * where they are, as the local copies (the same path a run's copy would be written to).
   * Attachments whose file is not here (uploaded to another manager of a shared database) are
   * left to that manager; until it starts, they cannot be downloaded or delivered.
   */
  async importFiles(): Promise<void> {
    let imported = 0;
    let absent = 0;
    for (const row of await this.repository.withoutContent()) {
      let bytes: Buffer;
      try {
        bytes = await fs.promises.readFile(this.filePath(row));
      } catch {
        absent++;
        continue;
      }
      if (bytes.length !== row.byteSize) {
        this.logger.warn({
          attachmentId: row.id,
          byteSize: bytes.length,
          expected: row.byteSize,
          msg: 'attachment file has the wrong size; not read in',
        });
        continue;
      }
      try {
        await this.database.write(async (tx) =>
          this.repository.insertContent(tx, row.id, toChunks(bytes), { onConflict: 'ignore' }),
        );
        imported++;
      } catch (err) {
        // Its row went meanwhile (a purge): nothing to keep.
        this.logger.warn({ attachmentId: row.id, error: (err as Error).message, msg: 'attachment file not read in' });
      }
    }
    if (imported > 0 || absent > 0) {
      this.logger.log({ absent, imported, msg: 'attachment files read into the database' });
    }
  }

  /** Attachments of many messages in one query, in upload order. */
  async forMessages(messageIds: string[]): Promise<Map<string, AttachmentResponseDto[]>> {
    const result = new Map<string, AttachmentResponseDto[]>();
    for (const row of await this.repository.ofMessages(messageIds)) {
      const list = result.get(row.messageId as string) ?? [];
      list.push(toAttachmentResponse(row));
      result.set(row.messageId as string, list);
    }
    return result;
  }

  private async assertAcceptsUploads(requirementId: string): Promise<void> {
    const status = await this.requirements.statusOf(requirementId);
    if (status === null) {
      throw requirementNotFound(requirementId);
    }
    if (status === 'cancelled') {
      throw conflict('requirement_cancelled', `Requirement ${requirementId} is cancelled`);
    }
  }

  /** The bytes from the database, chunk by chunk; a chunk gone meanwhile (a purge) ends the stream with an error. */
  private async *chunks(row: MessageAttachmentEntity, first: Buffer): AsyncGenerator<Buffer> {
    yield first;
    const count = Math.ceil(row.byteSize / ATTACHMENT_CHUNK_BYTES);
    for (let index = 1; index < count; index++) {
      const chunk = await this.repository.chunk(row.id, index);
      if (!chunk) {
        throw new Error(`attachment ${row.id} lost chunk ${index} while it was read`);
      }
      yield chunk;
    }
  }

  /**
   * The attachment's local copy, written from the database unless a whole one is there (by
   * size: the attachments directory is the manager's own, out of every agent's reach). Written
   * to a temp file and renamed, so two runs preparing at once, or a crash, never leave half a
   * file under the final name. If the bytes cannot be had, the path is still given (the agent
   * finds no file, as it would have before) and the reason logged.
   */
  private async localCopy(row: MessageAttachmentEntity): Promise<string> {
    const file = this.filePath(row);
    if (fs.statSync(file, { throwIfNoEntry: false })?.size === row.byteSize) {
      return file;
    }
    const temp = path.join(this.directory, `${COPY_PREFIX}${row.id}-${randomUUID()}`);
    try {
      const first = await this.repository.chunk(row.id, 0);
      if (!first) {
        throw new Error('its bytes are not in the database');
      }
      const handle = await fs.promises.open(temp, 'wx');
      try {
        for await (const chunk of this.chunks(row, first)) {
          await handle.write(chunk);
        }
      } finally {
        await handle.close();
      }
      fs.renameSync(temp, file);
    } catch (err) {
      this.logger.warn({
        attachmentId: row.id,
        error: (err as Error).message,
        msg: 'attachment copy not written for a run',
      });
    } finally {
      fs.rmSync(temp, { force: true });
    }
    return file;
  }

  /**
   * Streams the body into `temp`, enforcing the size limit as bytes arrive. On refusal the rest
   * of the body is drained and discarded (not the socket destroyed) so the client reads the 400.
   */
  private receive(body: Readable, temp: string): Promise<{ byteSize: number; head: Buffer }> {
    return new Promise((resolve, reject) => {
      let byteSize = 0;
      let head = Buffer.alloc(0);
      let settled = false;
      const out = fs.createWriteStream(temp, { flags: 'wx', mode: 0o600 });
      const fail = (error: Error): void => {
        if (settled) {
          return;
        }
        settled = true;
        body.resume();
        out.destroy();
        out.once('close', () => fs.rm(temp, { force: true }, () => reject(error)));
      };
      body.on('data', (chunk: Buffer) => {
        if (settled) {
          return;
        }
        byteSize += chunk.length;
        if (byteSize > LIMITS.attachmentBytes) {
          fail(invalid('attachment_too_large', `an attachment may be at most ${LIMITS.attachmentBytes} bytes`));
          return;
        }
        if (head.length < SIGNATURE_BYTES) {
          head = Buffer.concat([head, chunk.subarray(0, SIGNATURE_BYTES - head.length)]);
        }
        if (!out.write(chunk)) {
          body.pause();
          out.once('drain', () => body.resume());
        }
      });
      body.on('end', () => {
        if (!settled) {
          out.end();
        }
      });
      body.on('error', () => fail(invalid('upload_interrupted', 'the upload was interrupted before it completed')));
      body.on('close', () => {
        if (!body.readableEnded) {
          fail(invalid('upload_interrupted', 'the upload was interrupted before it completed'));
        }
      });
      out.on('error', (err: NodeJS.ErrnoException) => {
        const full = err.code === 'ENOSPC' || err.code === 'EDQUOT' || err.code === 'EFBIG';
        fail(full ? insufficientStorage('storage_full', 'not enough disk space to store the attachment') : err);
      });
      out.on('finish', () => {
        if (settled) {
          return;
        }
        settled = true;
        if (byteSize === 0) {
          fs.rm(temp, { force: true }, () => reject(invalid('attachment_empty', 'the attachment is empty')));
          return;
        }
        resolve({ byteSize, head });
      });
    });
  }
}

/** Bytes cut into the chunks they are stored as (views of `bytes`, not copies). */
function toChunks(bytes: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += ATTACHMENT_CHUNK_BYTES) {
    chunks.push(bytes.subarray(start, start + ATTACHMENT_CHUNK_BYTES));
  }
  return chunks;
}
