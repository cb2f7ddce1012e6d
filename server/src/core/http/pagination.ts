import { ApiPropertyOptional } from '@nestjs/swagger';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

import { LIMITS } from '@libs/contracts';

import { invalid } from '../errors/domain-error';
import { OptionalText, QueryInt } from '../validation';

/** `limit` and `cursor`, accepted by every list endpoint. */
export class PageQueryDto {
  @QueryInt({ description: `Page size (default ${LIMITS.pageSizeDefault})`, max: LIMITS.pageSizeMax, min: 1 })
  limit?: number;

  @OptionalText({ description: "Opaque cursor from a previous page's nextCursor", max: 512 })
  cursor?: string;
}

/** Opaque to clients: base64url JSON of the sort key of the last item sent. */
export function encodeCursor(key: Array<string | number>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor<T extends Array<string | number>>(
  cursor: string | undefined,
  shape: Array<'string' | 'number'>,
): T | null {
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

/** What a list request asks for: a page size and where to continue. */
export interface PageRequest {
  limit?: number;
  cursor?: string;
}

/** A page of rows, and the cursor of the next page (null on the last). */
export interface Page<E> {
  rows: E[];
  nextCursor: string | null;
}

/** One column of a list's sort key: its SQL name (with the query's alias) and its value on a row. */
export interface KeysetColumn<E> {
  column: string;
  type: 'string' | 'number';
  value(row: E): string | number;
}

/**
 * Keyset paging, the one way every list endpoint pages: ordered by `keys` (the last one unique,
 * so the order is total), continuing strictly after the cursor's key, one row more than the
 * page to know whether another follows. No OFFSET, so a deep page costs what the first does.
 */
export async function keysetPage<E extends ObjectLiteral>(
  qb: SelectQueryBuilder<E>,
  keys: Array<KeysetColumn<E>>,
  direction: 'ASC' | 'DESC',
  query: PageRequest,
): Promise<Page<E>> {
  const limit = pageSize(query.limit);
  const after = decodeCursor<Array<string | number>>(
    query.cursor,
    keys.map((k) => k.type),
  );
  if (after) {
    // (k0 > c0) OR (k0 = c0 AND k1 > c1) OR … — spelled out, as both SQLite and PostgreSQL
    // accept it and use the index on (k0, k1, …) for it.
    const op = direction === 'ASC' ? '>' : '<';
    const params: Record<string, string | number> = {};
    const branches = keys.map((key, i) => {
      const equal = keys.slice(0, i).map((k, j) => `${k.column} = :keyset${j}`);
      return `(${[...equal, `${key.column} ${op} :keyset${i}`].join(' AND ')})`;
    });
    after.forEach((value, i) => (params[`keyset${i}`] = value));
    qb.andWhere(`(${branches.join(' OR ')})`, params);
  }
  keys.forEach((key, i) => (i === 0 ? qb.orderBy(key.column, direction) : qb.addOrderBy(key.column, direction)));
  const rows = await qb.limit(limit + 1).getMany();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { nextCursor: rows.length > limit && last ? encodeCursor(keys.map((k) => k.value(last))) : null, rows: page };
}

/** The usual sort key: newest first by creation time, the id breaking ties. */
export function newestFirst<E extends { createdAt: string; id: string }>(alias: string): Array<KeysetColumn<E>> {
  return [
    { column: `${alias}.created_at`, type: 'string', value: (row) => row.createdAt },
    { column: `${alias}.id`, type: 'string', value: (row) => row.id },
  ];
}

export class PageInfoDto {
  @ApiPropertyOptional({ description: 'Cursor for the next page; null at the end', nullable: true, type: String })
  nextCursor!: string | null;
}
