import { Injectable } from '@nestjs/common';

import type { RequirementStatus } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { RequirementEntity } from '../requirements/requirement.entity';
import { SearchDocumentEntity } from './search-document.entity';

/** A last word up to this long is a prefix query on FTS5's prefix index (built for 2, 3 and 4). */
const PREFIX_INDEXED = 4;
/** A longer last word stands for the first this many indexed terms it starts. */
const COMPLETIONS_MAX = 16;

const quoted = (word: string) => `"${word.replace(/"/g, '""')}"`;

/** What the unicode61 tokenizer (remove_diacritics 2) makes of a word: lower case, no accents. */
const fold = (word: string) => word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

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
 * The full-text index: `search_document` rows (and, on SQLite, the FTS5 index `search_fts` that
 * triggers keep in step with them). Written only by the requirements and messages repositories,
 * in the units that write the rows it indexes, so a search never sees a message that is not
 * committed or misses one that is.
 */
@Injectable()
export class SearchRepository {
  constructor(private readonly database: Database) {}

  /** Indexes a new Requirement's title and description. */
  indexRequirement(uow: UnitOfWork, requirement: Pick<RequirementEntity, 'id' | 'title' | 'description'>): void {
    uow.insert(SearchDocumentEntity, {
      body: requirement.description,
      messageId: null,
      requirementId: requirement.id,
      sequence: null,
      title: requirement.title,
    } as SearchDocumentEntity);
  }

  /** Indexes a new message of a conversation. */
  indexMessage(uow: UnitOfWork, message: { id: string; requirementId: string; sequence: number; body: string }): void {
    uow.insert(SearchDocumentEntity, {
      body: message.body,
      messageId: message.id,
      requirementId: message.requirementId,
      sequence: message.sequence,
      title: '',
    } as SearchDocumentEntity);
  }

  /** A Requirement's title or description changed. */
  reindexRequirement(uow: UnitOfWork, requirement: Pick<RequirementEntity, 'id' | 'title' | 'description'>): void {
    uow.update(SearchDocumentEntity, { body: requirement.description, title: requirement.title }, { messageId: null, requirementId: requirement.id });
  }

  /** Before these Requirements are removed: their documents (and so, by trigger, their index entries). */
  forget(uow: UnitOfWork, requirementIds: string[]): void {
    uow.delete(SearchDocumentEntity, { requirementId: requirementIds });
  }

  /**
   * The best matches of `words` (each required; the last one also as the start of a word), best
   * first, `limit` of them after skipping `skip`.
   *
   * Ranked among the newest `window` matches: the index walks a term's matches in row order and
   * stops at the window, so a word found in a million messages costs what one found in a
   * thousand does (ranking every match grows with the data). A term with fewer matches is
   * ranked exactly; a very common one among its most recent uses, which is what a person looking
   * through their agents' work wants first. Snippets are built for the page only.
   */
  async search(words: string[], limit: number, skip: number, window: number): Promise<SearchHit[]> {
    return this.postgres ? this.searchPostgres(words, limit, skip, window) : this.searchSqlite(words, limit, skip, window);
  }

  private get postgres(): boolean {
    return this.database.readManager.connection.driver.options.type === 'postgres';
  }

  /** FTS5: quoted words (no operator can be injected), the last one a prefix query or its completions. */
  private async searchSqlite(words: string[], limit: number, skip: number, window: number): Promise<SearchHit[]> {
    const manager = this.database.readManager;
    const whole = words.slice(0, -1).map(quoted);
    const last = words[words.length - 1] ?? '';
    let lastMatch = `${quoted(last)}*`;
    if (last.length > PREFIX_INDEXED) {
      const folded = fold(last);
      const terms = await manager.query<Array<{ term: string }>>('SELECT term FROM search_vocab WHERE term >= ? AND term < ? ORDER BY term LIMIT ?', [
        folded,
        `${folded}\uffff`,
        COMPLETIONS_MAX,
      ]);
      if (terms.length === 0) {
        return [];
      }
      lastMatch = `(${terms.map((t) => quoted(t.term)).join(' OR ')})`;
    }
    const match = [...whole, lastMatch].join(' AND ');
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
    return this.withDocuments(page.map((hit) => ({ rowId: Number(hit.rowId), score: Number(hit.score), snippet: snippetOf.get(Number(hit.rowId)) ?? '' })));
  }

  /** tsvector/tsquery ('simple': no stemming, as FTS5's unicode61), the last word a prefix (`:*`). */
  private async searchPostgres(words: string[], limit: number, skip: number, window: number): Promise<SearchHit[]> {
    const lexemes = words.map((word, i) => `'${fold(word).replace(/'/g, "''")}'${i === words.length - 1 ? ':*' : ''}`).join(' & ');
    const page = await this.database.readManager.query<Array<{ rowId: number; score: number; snippet: string }>>(
      `SELECT row_id AS "rowId", score,
              ts_headline('simple', CASE WHEN title = '' THEN body ELSE title || ' ' || body END, to_tsquery('simple', $1), 'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', MaxWords=24, MinWords=8') AS snippet
         FROM (SELECT row_id, title, body, -ts_rank(setweight(to_tsvector('simple', title), 'A') || to_tsvector('simple', body), to_tsquery('simple', $1), 1) AS score
                 FROM search_document WHERE to_tsvector('simple', title || ' ' || body) @@ to_tsquery('simple', $1) ORDER BY row_id DESC LIMIT $2) AS recent
        ORDER BY score, row_id DESC LIMIT $3 OFFSET $4`,
      [lexemes, window, limit, skip],
    );
    return this.withDocuments(page.map((hit) => ({ rowId: Number(hit.rowId), score: Number(hit.score), snippet: hit.snippet })));
  }

  /** The page's Requirement and message for each ranked row (a row purged meanwhile drops out). */
  private async withDocuments(ranked: Array<{ rowId: number; score: number; snippet: string }>): Promise<SearchHit[]> {
    if (ranked.length === 0) {
      return [];
    }
    const rowIds = ranked.map((hit) => hit.rowId);
    const documents = await this.database
      .read(SearchDocumentEntity)
      .createQueryBuilder('d')
      .innerJoin(RequirementEntity, 'r', 'r.id = d.requirement_id')
      // Quoted: PostgreSQL folds a bare alias to lower case.
      .select(['d.row_id AS "rowId"', 'd.requirement_id AS "requirementId"', 'd.message_id AS "messageId"', 'd.sequence AS sequence', 'r.title AS title', 'r.status AS status'])
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
