import { Injectable } from '@nestjs/common';

import type { RequirementStatus } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { RequirementEntity } from '../requirements/requirement.entity';
import { SearchDocumentEntity } from './search-document.entity';

/** Marks around a matched term in a snippet (control characters: never typed, never rendered). */
export const MATCH_START = '\u0002';
export const MATCH_END = '\u0003';

export interface SearchHit {
  rowId: number;
  score: number;
  snippet: string;
  requirementId: string;
  requirementTitle: string;
  requirementStatus: RequirementStatus;
  messageId: string | null;
  sequence: number | null;
}

/**
 * The full-text index (`search_document` and SQLite's FTS5 `search_fts`). Written only by the
 * requirements and messages repositories, in the units that write the rows it indexes, so a
 * search never sees a message that is not committed or misses one that is.
 */
@Injectable()
export class SearchRepository {
  constructor(private readonly database: Database) {}

  /** Indexes a new Requirement's title and description. */
  indexRequirement(uow: UnitOfWork, requirement: Pick<RequirementEntity, 'id' | 'title' | 'description'>): void {
    uow.insert(SearchDocumentEntity, { messageId: null, requirementId: requirement.id, sequence: null } as SearchDocumentEntity);
    // The row just inserted (statements run in order on the one writer connection).
    uow.execute('INSERT INTO search_fts (rowid, title, body) VALUES (last_insert_rowid(), ?, ?)', [requirement.title, requirement.description]);
  }

  /** Indexes a new message of a conversation. */
  indexMessage(uow: UnitOfWork, message: { id: string; requirementId: string; sequence: number; body: string }): void {
    uow.insert(SearchDocumentEntity, { messageId: message.id, requirementId: message.requirementId, sequence: message.sequence } as SearchDocumentEntity);
    uow.execute("INSERT INTO search_fts (rowid, title, body) VALUES (last_insert_rowid(), '', ?)", [message.body]);
  }

  /** A Requirement's title or description changed. */
  reindexRequirement(uow: UnitOfWork, requirement: Pick<RequirementEntity, 'id' | 'title' | 'description'>): void {
    uow.execute('UPDATE search_fts SET title = ?, body = ? WHERE rowid = (SELECT row_id FROM search_document WHERE requirement_id = ? AND message_id IS NULL)', [
      requirement.title,
      requirement.description,
      requirement.id,
    ]);
  }

  /** Before these Requirements are removed: their index rows (search_document goes with them, by cascade). */
  forget(uow: UnitOfWork, requirementIds: string[]): void {
    if (requirementIds.length === 0) {
      return;
    }
    uow.execute(`DELETE FROM search_fts WHERE rowid IN (SELECT row_id FROM search_document WHERE requirement_id IN (${requirementIds.map(() => '?').join(', ')}))`, requirementIds);
  }

  /** Indexed terms that start with `prefix` (already case- and accent-folded), at most `limit`, in term order. */
  async termsStarting(prefix: string, limit: number): Promise<string[]> {
    const rows = await this.database.readManager.query<Array<{ term: string }>>('SELECT term FROM search_vocab WHERE term >= ? AND term < ? ORDER BY term LIMIT ?', [
      prefix,
      `${prefix}\uffff`,
      limit,
    ]);
    return rows.map((row) => row.term);
  }

  /**
   * The best matches of an FTS5 query, best first, `limit` of them after skipping `skip`.
   *
   * Ranked among the newest `window` matches: FTS5 walks a term's matches in rowid order and
   * stops at the window, so a word found in a million messages costs what one found in a
   * thousand does (bm25 over every match grows with the data). A term with fewer matches is
   * ranked exactly; a very common one is ranked among its most recent uses, which is what a
   * person looking through their agents' work wants first. Snippets are built for the page only.
   */
  async search(match: string, limit: number, skip: number, window: number): Promise<SearchHit[]> {
    const manager = this.database.readManager;
    const page = await manager.query<Array<{ rowId: number; score: number }>>(
      `SELECT rowId, score FROM (SELECT rowid AS rowId, bm25(search_fts, 4.0, 1.0) AS score FROM search_fts WHERE search_fts MATCH ? ORDER BY rowid DESC LIMIT ?)
         ORDER BY score, rowId DESC LIMIT ? OFFSET ?`,
      [match, window, limit, skip],
    );
    if (page.length === 0) {
      return [];
    }
    const rowIds = page.map((hit) => Number(hit.rowId));
    const snippets = await manager.query<Array<{ rowId: number; snippet: string }>>(
      `SELECT rowid AS rowId, snippet(search_fts, -1, char(2), char(3), '…', 16) AS snippet FROM search_fts WHERE search_fts MATCH ? AND rowid IN (${rowIds.map(() => '?').join(', ')})`,
      [match, ...rowIds],
    );
    const snippetOf = new Map(snippets.map((row) => [Number(row.rowId), row.snippet]));
    const ranked = page.map((hit) => ({ rowId: Number(hit.rowId), score: Number(hit.score), snippet: snippetOf.get(Number(hit.rowId)) ?? '' }));
    if (ranked.length === 0) {
      return [];
    }
    const documents = await this.database
      .read(SearchDocumentEntity)
      .createQueryBuilder('d')
      .innerJoin(RequirementEntity, 'r', 'r.id = d.requirement_id')
      .select(['d.row_id AS rowId', 'd.requirement_id AS requirementId', 'd.message_id AS messageId', 'd.sequence AS sequence', 'r.title AS title', 'r.status AS status'])
      .where('d.row_id IN (:...rowIds)', { rowIds })
      .getRawMany<{ rowId: number; requirementId: string; messageId: string | null; sequence: number | null; title: string; status: RequirementStatus }>();
    const byRow = new Map(documents.map((d) => [Number(d.rowId), d]));
    return ranked.flatMap((hit) => {
      const document = byRow.get(hit.rowId);
      return document
        ? [
            {
              messageId: document.messageId,
              requirementId: document.requirementId,
              requirementStatus: document.status,
              requirementTitle: document.title,
              rowId: hit.rowId,
              score: hit.score,
              sequence: document.sequence === null ? null : Number(document.sequence),
              snippet: hit.snippet,
            },
          ]
        : [];
    });
  }
}
