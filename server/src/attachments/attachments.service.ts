import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';

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
import { AttachmentsRepository } from './attachments.repository';
import { AttachmentResponseDto, toAttachmentResponse } from './dto/attachment-response.dto';
import { SIGNATURE_BYTES, classify, storedExtension } from './file-signature';
import { MessageAttachmentEntity } from './message-attachment.entity';

export interface UploadInput {
  body: Readable;
  fileName: string;
  declaredType: string | undefined;
  declaredLength: number | null;
}

const TEMP_PREFIX = '.upload-';

/**
 * Attachments live as files named by their ID under the data directory; rows describe them.
 * Uploads stream to a temp file with a hard byte limit (never buffered whole), then move into
 * place, so an aborted or oversized upload leaves nothing behind.
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

  /** Temp files of uploads cut short by a crash are removed at start. */
  onApplicationBootstrap(): void {
    for (const name of fs.readdirSync(this.directory)) {
      if (name.startsWith(TEMP_PREFIX)) {
        fs.rmSync(path.join(this.directory, name), { force: true });
      }
    }
  }

  get directory(): string {
    return this.runtime.paths.attachmentsDirectory;
  }

  /** Absolute path of an attachment's bytes (agents read files from here): `<id><ext>`. */
  filePath(attachment: Pick<MessageAttachmentEntity, 'fileName' | 'id' | 'kind' | 'mediaType'>): string {
    return path.join(this.directory, `${attachment.id}${storedExtension(attachment.kind, attachment.mediaType, attachment.fileName)}`);
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
    const temp = path.join(this.directory, `${TEMP_PREFIX}${id}`);
    const { byteSize, head } = await this.receive(input.body, temp);
    const { kind, mediaType } = classify(head, input.declaredType);
    const finalPath = this.filePath({ fileName: input.fileName, id, kind, mediaType });
    fs.renameSync(temp, finalPath);
    try {
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
        return row;
      });
      this.logger.log({ ...audit(actor), attachmentId: id, byteSize, kind, msg: 'attachment uploaded', requirementId });
      return toAttachmentResponse(entity);
    } catch (err) {
      fs.rmSync(finalPath, { force: true });
      throw err;
    }
  }

  /** For download: the row and a stream of the bytes. */
  async open(id: string): Promise<{ attachment: AttachmentResponseDto; stream: fs.ReadStream }> {
    const row = isId('attachment', id) ? await this.repository.findById(id) : null;
    if (!row) {
      throw notFound('attachment_not_found', `Attachment ${id} not found`);
    }
    const stream = fs.createReadStream(this.filePath(row));
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', () => reject(notFound('attachment_not_found', `Attachment ${id} has no file`)));
    });
    return { attachment: toAttachmentResponse(row), stream };
  }

  /**
   * Gives uploaded attachments to a new message. Each ID must be an upload of this Requirement
   * that no message holds yet, and may appear once.
   */
  async claim(tx: UnitOfWork, requirementId: string, ids: string[], messageId: string): Promise<AttachmentResponseDto[]> {
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
   * The stored files of every attachment a Requirement's agent session has been given, up to
   * message `toSequence`: what its agent may open (its sandbox shows these and no other).
   * Earlier ones count too: a resumed session still has their paths in its conversation.
   */
  async deliveredFiles(requirementId: string, toSequence: number): Promise<string[]> {
    const rows = await this.repository.deliveredUpTo(requirementId, toSequence);
    return rows.map((row) => this.filePath(row));
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
