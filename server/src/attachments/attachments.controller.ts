import { Controller, Get, Headers, HttpCode, Param, Post, Req, Res, StreamableFile } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiCreatedResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { AttachmentsService } from './attachments.service';
import { AttachmentResponseDto } from './dto/attachment-response.dto';
import { parseFileName } from './file-name';

function contentDisposition(kind: 'inline' | 'attachment', fileName: string): string {
  // An ASCII fallback for old clients plus the exact name in RFC 5987 form.
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
}

@ApiTags('attachments')
@Controller()
export class AttachmentsController {
  constructor(private readonly attachments: AttachmentsService) {}

  @Post('requirements/:id/attachments')
  @HttpCode(201)
  @ApiOperation({ summary: 'Upload a file (raw body, at most 20 MB) to attach to a later start or reply' })
  @ApiConsumes('application/octet-stream')
  @ApiBody({ schema: { format: 'binary', type: 'string' } })
  @ApiHeader({ description: 'The file name, URI-encoded', name: 'X-File-Name', required: true })
  @ApiCreatedResponse({ type: AttachmentResponseDto })
  @ApiNotFoundResponse()
  uploadAttachment(
    @Param('id') id: string,
    @Headers('x-file-name') fileName: string | undefined,
    @Req() req: Request,
    @Actor() actor: EventActor,
  ): Promise<AttachmentResponseDto> {
    const length = req.headers['content-length'];
    return this.attachments.upload(
      id,
      {
        body: req,
        declaredLength: length !== undefined && /^\d+$/.test(length) ? Number(length) : null,
        declaredType: req.headers['content-type'],
        fileName: parseFileName(fileName),
      },
      actor,
    );
  }

  @Get('attachments/:id')
  @ApiOperation({ summary: 'Download an attachment: images inline, other files as a download' })
  @ApiProduces('application/octet-stream')
  @ApiOkResponse({ schema: { format: 'binary', type: 'string' } })
  @ApiNotFoundResponse()
  async getAttachment(@Param('id') id: string, @Res({ passthrough: true }) res: Response): Promise<StreamableFile> {
    const { attachment, stream } = await this.attachments.open(id);
    res.set({
      'Cache-Control': 'private, max-age=31536000, immutable',
      'Content-Disposition': contentDisposition(
        attachment.kind === 'image' ? 'inline' : 'attachment',
        attachment.fileName,
      ),
      'Content-Length': String(attachment.byteSize),
      // Even a file opened directly in the browser can run nothing and reach nothing.
      'Content-Security-Policy': "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
      'Content-Type': attachment.mediaType,
      'X-Content-Type-Options': 'nosniff',
    });
    return new StreamableFile(stream);
  }
}
