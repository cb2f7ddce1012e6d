import { Injectable } from '@nestjs/common';

import type { RequirementStatus } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { CommitInsert, UnitOfWork } from '../core/database/unit-of-work';
import { SearchDocumentEntity } from './search-document.entity';

/** What the index keeps of a Requirement (its own text). */
export interface IndexedRequirement {
  id: string;
  title: string;
  description: string;
}

/** A last word up to this long is a prefix query on FTS5's prefix index (built for 2, 3 and 4). */
const PREFIX_INDEXED = 4;
/** A longer last word stands for itself and the first of the longer indexed terms it starts, this many in all. */
const COMPLETIONS_MAX = 16;
/** bm25's row count of a phrase is estimated on this many newest rows (exact below it). */
const SAMPLE_ROWS = 10_000;
/** PostgreSQL: the newest rows searched first, as a multiple of the rank window, and how much each widening multiplies them. */
const POSTGRES_SPAN = 8;
/** FTS5's bm25 constants. */
const BM25_K1 = 1.2;
const BM25_B = 0.75;
/** Column weights: a title counts four times the text (as `bm25(search_fts, 4.0, 1.0)` did). */
const TITLE_WEIGHT = 4;

const quoted = (word: string) => `"${word.replace(/"/g, '""')}"`;

/** What the unicode61 tokenizer (remove_diacritics 2) makes of a word: lower case, no accents. */
const fold = (word: string) =>
  ASCII.test(word) ? word.toLowerCase() : word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
/** Text with nothing to decompose: folded by lower-casing alone. */
const ASCII = /^[\u0000-\u007f]*$/;

/** unicode61's tokens (letters, digits and private-use characters; everything else separates), folded. */
const tokens = (text: string): string[] =>
  fold(text)
    .split(/[^\p{L}\p{N}\p{Co}]+/u)
    .filter((token) => token.length > 0);

/** Marks around a matched term in a snippet (control characters: never typed, never rendered). */
export const MATCH_START = '\u0002';
export const MATCH_END = '\u0003';

/**
 * Messages' documents, written with their batch just before COMMIT (see CommitInsert): a
 * single-row INSERT per message, each firing the FTS5 triggers inside its unit's savepoint,
 * doubled what SQLite spent on a reply (docs/performance.md, "replies"). Same transaction as the
 * message, so a search still sees exactly the committed messages. A Requirement removed by a
 * later unit of the same batch took its messages with it: its rows are skipped (the foreign key
 * would fail the whole batch's COMMIT).
 */
const MESSAGE_DOCUMENTS: CommitInsert = {
  key: 'search_document:message',
  sql: (rows) =>
    `INSERT INTO search_document (requirement_id, message_id, sequence, title, body)
       SELECT v.column1, v.column2, CAST(v.column3 AS integer), '', v.column4 FROM (VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?)').join(', ')}) AS v
        WHERE EXISTS (SELECT 1 FROM requirement r WHERE r.id = v.column1)`,
  width: 4,
};

/** The same tokens, with where each one is in `text` (for snippets). */
const spans = (text: string): Array<{ token: string; start: number; end: number }> =>
  [...text.matchAll(/[\p{L}\p{N}\p{M}\p{Co}]+/gu)]
    .map((m) => ({ end: m.index + m[0].length, start: m.index, token: fold(m[0]) }))
    .filter((span) => span.token.length > 0);
/** Tokens in a snippet, as `snippet(search_fts, …, 16)` had them. */
const SNIPPET_TOKENS = 16;

/** A query word as the index matched it: its tokens in a row, the last one a prefix for the last word. */
interface Term {
  tokens: string[];
  prefix: boolean;
}

/** Whether `term` occurs in a column's tokens at `i`. */
function occursAt(column: string[], i: number, term: Term): boolean {
  const k = term.tokens.length;
  if (i + k > column.length) {
    return false;
  }
  for (let j = 0; j < k; j++) {
    if (column[i + j] !== term.tokens[j] && !(term.prefix && j === k - 1 && column[i + j].startsWith(term.tokens[j]))) {
      return false;
    }
  }
  return true;
}

/** How many times `term` occurs in a column's tokens. */
function occurrences(column: string[], term: Term): number {
  let count = 0;
  for (let i = 0; i < column.length; i++) {
    count += occursAt(column, i, term) ? 1 : 0;
  }
  return count;
}

/**
 * FTS5's snippet() as the search used it: the column with the most of the query's words, its
 * SNIPPET_TOKENS tokens that hold the most of them (distinct words first), the matches marked,
 * an ellipsis where text is left out.
 */
function snippet(title: string, body: string, terms: Term[]): string {
  const candidates = [title, body].map((text) => {
    const found = spans(text);
    const column = found.map((span) => span.token);
    const marked = new Array<number>(column.length).fill(-1);
    terms.forEach((term, t) => {
      for (let i = 0; i < column.length; i++) {
        if (occursAt(column, i, term)) {
          marked.fill(t, i, i + term.tokens.length);
        }
      }
    });
    let best = { distinct: -1, hits: -1, start: 0 };
    for (let start = 0; start === 0 || start + SNIPPET_TOKENS <= column.length; start++) {
      const inside = marked.slice(start, start + SNIPPET_TOKENS).filter((t) => t >= 0);
      const distinct = new Set(inside).size;
      if (distinct > best.distinct || (distinct === best.distinct && inside.length > best.hits)) {
        best = { distinct, hits: inside.length, start };
      }
    }
    return { ...best, found, marked, text };
  });
  const { found, marked, start, text } =
    candidates[1].distinct > candidates[0].distinct || candidates[0].found.length === 0 ? candidates[1] : candidates[0];
  const end = Math.min(start + SNIPPET_TOKENS, found.length);
  let out = start > 0 ? '…' : text.slice(0, found[0]?.start ?? text.length);
  for (let i = start; i < end; i++) {
    const { start: from, end: to } = found[i];
    out += i > start ? text.slice(found[i - 1].end, from) : '';
    out += marked[i] >= 0 ? `${MATCH_START}${text.slice(from, to)}${MATCH_END}` : text.slice(from, to);
  }
  return out + (end < found.length ? '…' : text.slice(found[end - 1]?.end ?? text.length));
}

/** FTS5's bm25() (fts5_aux.c), negated as it is: lower is better. */
function bm25(title: string[], body: string[], terms: Term[], idf: number[], averageLength: number): number {
  const length = title.length + body.length;
  let score = 0;
  terms.forEach((term, i) => {
    const frequency = TITLE_WEIGHT * occurrences(title, term) + occurrences(body, term);
    score +=
      (idf[i] * (frequency * (BM25_K1 + 1))) / (frequency + BM25_K1 * (1 - BM25_B + (BM25_B * length) / averageLength));
  });
  return -score;
}

/** SQLite's varints (FTS5's averages record is a row count and then each column's token total in them). */
function varints(block: Buffer): number[] {
  const values: number[] = [];
  let i = 0;
  while (i < block.length) {
    let value = 0;
    for (let n = 0; i < block.length; n++) {
      const byte = block[i++];
      if (n === 8) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) {
        break;
      }
    }
    values.push(value);
  }
  return values;
}

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
  indexRequirement(uow: UnitOfWork, requirement: IndexedRequirement): void {
    uow.insert(SearchDocumentEntity, {
      body: requirement.description,
      messageId: null,
      requirementId: requirement.id,
      sequence: null,
      title: requirement.title,
    } as SearchDocumentEntity);
  }

  /** Indexes a new message of a conversation, with its unit's batch (see MESSAGE_DOCUMENTS). */
  indexMessage(uow: UnitOfWork, message: { id: string; requirementId: string; sequence: number; body: string }): void {
    uow.insertAtCommit(MESSAGE_DOCUMENTS, [message.requirementId, message.id, message.sequence, message.body]);
  }

  /** A Requirement's title or description changed. */
  reindexRequirement(uow: UnitOfWork, requirement: IndexedRequirement): void {
    uow.update(
      SearchDocumentEntity,
      { body: requirement.description, title: requirement.title },
      { messageId: null, requirementId: requirement.id },
    );
  }

  /** Before these Requirements are removed: their documents (and so, by trigger, their index entries). */
  forget(uow: UnitOfWork, requirementIds: string[]): void {
    uow.delete(SearchDocumentEntity, { requirementId: requirementIds });
  }

  /**
   * The best matches of `words` (each required; the last one also as the start of a word), best
   * first, `limit` of them after skipping `skip`.
   *
   * Ranked among the newest `window` matches, and nothing on the way reads all of a term's
   * matches, so a word found in a million messages costs what one found in a thousand does:
   * - SQLite: FTS5 walks a term's doclist in rowid order and stops at the window, but its bm25()
   *   first counts every row each phrase occurs in (its IDF), a full doclist scan (measured: 45 to
   *   80 ms for a word in 500k of 1M rows, the whole of the large/small gap). So the window's rows
   *   are scored here with FTS5's own bm25 formula, the corpus size and average length read from
   *   FTS5's averages record, and each phrase's row count estimated on the newest SAMPLE_ROWS
   *   rows (exact on a smaller index, where the ranking is FTS5's own).
   * - PostgreSQL: GIN cannot return rows in row_id order, so `ORDER BY row_id DESC LIMIT` sorted
   *   (and rechecked) every match; see newestPostgres.
   * A term with fewer matches is ranked exactly; a very common one among its most recent uses,
   * which is what a person looking through their agents' work wants first. Snippets are built
   * for the page only.
   */
  async search(words: string[], limit: number, skip: number, window: number): Promise<SearchHit[]> {
    return this.postgres
      ? this.searchPostgres(words, limit, skip, window)
      : this.searchSqlite(words, limit, skip, window);
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
      // fts5vocab counts every row of each term it lists (a doclist scan): the word itself is
      // matched as it is, and the vocabulary asked only for longer terms, from just past it.
      const folded = fold(last);
      const terms = await manager.query<Array<{ term: string }>>(
        'SELECT term FROM search_vocab WHERE term >= ? AND term < ? ORDER BY term LIMIT ?',
        [`${folded}\u0001`, `${folded}\uffff`, COMPLETIONS_MAX - 1],
      );
      lastMatch = `(${[last, ...terms.map((t) => t.term)].map(quoted).join(' OR ')})`;
    }
    const phrases = [...whole, lastMatch];
    const match = phrases.join(' AND ');
    const rows = await manager.query<Array<{ rowId: number; title: string; body: string }>>(
      `SELECT d.row_id AS rowId, d.title AS title, d.body AS body
         FROM (SELECT rowid AS r FROM search_fts WHERE search_fts MATCH ? ORDER BY rowid DESC LIMIT ?) AS m JOIN search_document d ON d.row_id = m.r`,
      [match, window],
    );
    if (rows.length === 0) {
      return [];
    }
    const terms = words.map((word, i) => ({ prefix: i === words.length - 1, tokens: tokens(word) }));
    const stats = await this.corpusStats(
      phrases,
      rows.length < window && phrases.length === 1 ? rows.length : undefined,
    );
    const idf = stats.hits.map((n) => Math.max(Math.log((stats.rows - n + 0.5) / (n + 0.5)), 1e-6));
    const page = rows
      .map((row) => ({
        rowId: Number(row.rowId),
        score: bm25(tokens(row.title), tokens(row.body), terms, idf, stats.averageLength),
      }))
      .sort((a, b) => a.score - b.score || b.rowId - a.rowId)
      .slice(skip, skip + limit);
    if (page.length === 0) {
      return [];
    }
    // Built here from the rows already read: FTS5's snippet() behind `rowid IN (…)` seeks every
    // phrase's doclist once per row (5 to 11 ms a page for a word in 500k rows, against 0.4 ms).
    const textOf = new Map(rows.map((row) => [Number(row.rowId), row]));
    return this.withDocuments(
      page.map((hit) => {
        const row = textOf.get(hit.rowId);
        return { rowId: hit.rowId, score: hit.score, snippet: row ? snippet(row.title, row.body, terms) : '' };
      }),
    );
  }

  /**
   * What bm25 needs of the whole index: its row count and average length in tokens (FTS5's
   * averages record, one small row), and the rows each phrase occurs in. Those are counted on the
   * newest SAMPLE_ROWS rows and scaled (a bounded range of each doclist); `knownHits`, when the
   * window held every match of a single phrase, is exact already.
   */
  private async corpusStats(
    phrases: string[],
    knownHits: number | undefined,
  ): Promise<{ rows: number; averageLength: number; hits: number[] }> {
    const manager = this.database.readManager;
    const [averages] = await manager.query<Array<{ block: Buffer }>>('SELECT block FROM search_fts_data WHERE id = 1');
    const [rows = 0, ...columns] = averages ? varints(averages.block) : [];
    const averageLength = rows > 0 ? columns.reduce((sum, n) => sum + n, 0) / rows : 1;
    if (knownHits !== undefined) {
      return { averageLength, hits: [knownHits], rows };
    }
    const [{ top }] = await manager.query<Array<{ top: number | null }>>(
      'SELECT max(row_id) AS top FROM search_document',
    );
    const from = Number(top ?? 0) - SAMPLE_ROWS;
    const [{ sampled }] = await manager.query<Array<{ sampled: number }>>(
      'SELECT count(*) AS sampled FROM search_document WHERE row_id > ?',
      [from],
    );
    const hits: number[] = [];
    for (const phrase of phrases) {
      const [{ n }] = await manager.query<Array<{ n: number }>>(
        'SELECT count(*) AS n FROM search_fts WHERE search_fts MATCH ? AND rowid > ?',
        [phrase, from],
      );
      hits.push(Number(sampled) > 0 ? (Number(n) * rows) / Number(sampled) : 0);
    }
    return { averageLength, hits, rows };
  }

  /** tsvector/tsquery ('simple': no stemming, as FTS5's unicode61), the last word a prefix (`:*`). */
  private async searchPostgres(words: string[], limit: number, skip: number, window: number): Promise<SearchHit[]> {
    const lexemes = words
      .map((word, i) => `'${fold(word).replace(/'/g, "''")}'${i === words.length - 1 ? ':*' : ''}`)
      .join(' & ');
    const rowIds = await this.newestPostgres(lexemes, window);
    if (rowIds.length === 0) {
      return [];
    }
    const page = await this.database.readManager.query<Array<{ rowId: number; score: number; snippet: string }>>(
      `SELECT row_id AS "rowId", score,
              ts_headline('simple', CASE WHEN title = '' THEN body ELSE title || ' ' || body END, to_tsquery('simple', $1), 'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', MaxWords=24, MinWords=8') AS snippet
         FROM (SELECT row_id, title, body, -ts_rank(setweight(to_tsvector('simple', title), 'A') || to_tsvector('simple', body), to_tsquery('simple', $1), 1) AS score
                 FROM search_document WHERE row_id = ANY($2::int[]) ORDER BY score, row_id DESC LIMIT $3 OFFSET $4) AS page
        ORDER BY score, row_id DESC`,
      [lexemes, rowIds, limit, skip],
    );
    return this.withDocuments(
      page.map((hit) => ({ rowId: Number(hit.rowId), score: Number(hit.score), snippet: hit.snippet })),
    );
  }

  /**
   * The newest `window` matches' row ids. GIN hands back matches in no order, so `ORDER BY row_id
   * DESC LIMIT` over the whole table fetched, rechecked and sorted every match (measured: 110k
   * rows for a word in half of 220k, 230 ms). Instead the search starts on the newest
   * POSTGRES_SPAN × window rows (the GIN bitmap ANDed with the primary key's range, so only that
   * range's rows are read) and widens the range POSTGRES_SPAN times over until it holds `window`
   * matches or is the whole table. Every match outside a range is older than every one inside, so
   * the result is exactly the newest `window` matches; a common word is answered from the first
   * range, a rare one after a few more lookups of its short GIN entry.
   *
   * `row_id + 0`: ordered by the key itself, a wide range and a small LIMIT made the planner walk
   * the primary key backwards computing to_tsvector for every row until LIMIT matches (2.5 s for
   * a rare word over 220k rows, EXPLAIN ANALYZE); the expression leaves it the GIN bitmap.
   */
  private async newestPostgres(lexemes: string, window: number): Promise<number[]> {
    const manager = this.database.readManager;
    const [{ top }] = await manager.query<Array<{ top: number | null }>>(
      'SELECT max(row_id) AS top FROM search_document',
    );
    if (top === null) {
      return [];
    }
    for (let span = window * POSTGRES_SPAN; ; span *= POSTGRES_SPAN) {
      const from = Number(top) - span;
      const rows = await manager.query<Array<{ rowId: number }>>(
        `SELECT row_id AS "rowId" FROM search_document
          WHERE row_id > $2 AND to_tsvector('simple', title || ' ' || body) @@ to_tsquery('simple', $1) ORDER BY row_id + 0 DESC LIMIT $3`,
        [lexemes, from, window],
      );
      if (rows.length >= window || from <= 0) {
        return rows.map((row) => Number(row.rowId));
      }
    }
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
      // By table name: the index sits below the Requirement feature, which writes through it.
      .innerJoin('requirement', 'r', 'r.id = d.requirement_id')
      // Quoted: PostgreSQL folds a bare alias to lower case.
      .select([
        'd.row_id AS "rowId"',
        'd.requirement_id AS "requirementId"',
        'd.message_id AS "messageId"',
        'd.sequence AS sequence',
        'r.title AS title',
        'r.status AS status',
      ])
      .where('d.row_id IN (:...rowIds)', { rowIds })
      .getRawMany<{
        rowId: number;
        requirementId: string;
        messageId: string | null;
        sequence: number | null;
        title: string;
        status: RequirementStatus;
      }>();
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
