import { ApiPropertyOptional } from '@nestjs/swagger';

import { LIMITS } from '@libs/contracts';

import { invalid } from '../errors/domain-error';
import { OptionalText, QueryInt } from '../validation';

/** `limit` and `cursor`, accepted by every list endpoint. */
export class PageQueryDto {
  @QueryInt({ description: `Page size (default ${LIMITS.pageSizeDefault})`, max: LIMITS.pageSizeMax, min: 1 })
  limit?: number;

  @OptionalText({ description: 'Opaque cursor from a previous page\'s nextCursor', max: 512 })
  cursor?: string;
}

/** Opaque to clients: base64url JSON of the sort key of the last item sent. */
export function encodeCursor(key: Array<string | number>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor<T extends Array<string | number>>(cursor: string | undefined, shape: Array<'string' | 'number'>): T | null {
  if (cursor === undefined) {
    return null;
  }
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(key) && key.length === shape.length && key.every((v, i) => typeof v === shape[i])) {
      return key as T;
    }
  } catch {
    // fall through
  }
  throw invalid('invalid_cursor', 'cursor is not one this server issued');
}

export function pageSize(limit: number | undefined): number {
  return limit ?? LIMITS.pageSizeDefault;
}

export class PageInfoDto {
  @ApiPropertyOptional({ description: 'Cursor for the next page; null at the end', nullable: true, type: String })
  nextCursor: string | null;
}
