import { Injectable } from '@nestjs/common';

import { invalid } from '../core/errors/domain-error';
import { decodeCursor, encodeCursor, pageSize } from '../core/http/pagination';
import { SearchHitDto, SearchPageDto, SearchQueryDto, SnippetPartDto } from './dto/search.dto';
import { MATCH_END, MATCH_START, SearchRepository } from './search.repository';

/** Words per query: each one is an index lookup; more would only cost. */
const TERMS_MAX = 12;
/** How deep a search pages: ranked results past this many are not worth reading. */
const DEPTH_MAX = 500;
/** Matches ranked per search, newest first (see SearchRepository.search): bounds its cost. */
const RANK_WINDOW = 2000;
/** A last word up to this long is a prefix query on FTS5's prefix index (built for 2, 3 and 4). */
const PREFIX_INDEXED = 4;
/** A longer last word stands for the first this many indexed terms it starts. */
const COMPLETIONS_MAX = 16;

/**
 * `GET /api/search`: every word of the query must occur (in any order, case and accents
 * folded); the last word also matches as a prefix, so results appear while typing. Ranked by
 * bm25, a title counting four times the text, among the newest RANK_WINDOW matches.
 */
@Injectable()
export class SearchService {
  constructor(private readonly repository: SearchRepository) {}

  async search(query: SearchQueryDto): Promise<SearchPageDto> {
    const match = await this.matchFor(query.q);
    const limit = pageSize(query.limit);
    // A ranked list has no stable key to continue after (a new message can outrank the rest), so the cursor is a depth.
    const [skip] = decodeCursor<[number]>(query.cursor, ['number']) ?? [0];
    if (!Number.isInteger(skip) || skip < 0 || skip >= DEPTH_MAX) {
      throw invalid('invalid_cursor', 'cursor is not one this server issued');
    }
    const take = Math.min(limit, DEPTH_MAX - skip);
    const hits = match === null ? [] : await this.repository.search(match, take + 1, skip, RANK_WINDOW);
    const more = hits.length > take && skip + take < DEPTH_MAX;
    const items: SearchHitDto[] = hits.slice(0, take).map((hit) => ({
      messageId: hit.messageId,
      requirementId: hit.requirementId,
      requirementStatus: hit.requirementStatus,
      requirementTitle: hit.requirementTitle,
      sequence: hit.sequence,
      snippet: snippetParts(hit.snippet),
    }));
    return { items, nextCursor: more ? encodeCursor([skip + take]) : null };
  }

  /** The FTS5 query, or null when the last word starts no indexed term (nothing can match). */
  private async matchFor(text: string): Promise<string | null> {
    const words = searchWords(text);
    const last = words.pop() as string;
    const whole = words.map(quoted);
    if (last.length <= PREFIX_INDEXED) {
      return [...whole, `${quoted(last)}*`].join(' AND ');
    }
    const terms = await this.repository.termsStarting(fold(last), COMPLETIONS_MAX);
    return terms.length === 0 ? null : [...whole, `(${terms.map(quoted).join(' OR ')})`].join(' AND ');
  }
}

/**
 * The words a person typed, for an FTS5 query: each becomes a quoted string (so no FTS5
 * operator or column filter can be injected), all of them required; the last one a prefix.
 */
export function searchWords(text: string): string[] {
  const words = text
    .split(/[\s"]+/u)
    .map((word) => word.replace(/[^\p{L}\p{N}_'-]+/gu, ''))
    .filter((word) => word.length > 0);
  if (words.length === 0) {
    throw invalid('invalid_search', 'the search needs at least one word of letters or digits');
  }
  if (words.length > TERMS_MAX) {
    throw invalid('invalid_search', `a search takes at most ${TERMS_MAX} words`);
  }
  return words;
}

const quoted = (word: string) => `"${word.replace(/"/g, '""')}"`;

/** What the unicode61 tokenizer (remove_diacritics 2) makes of a word: lower case, no accents. */
const fold = (word: string) => word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

/** Splits a snippet at the match marks. */
export function snippetParts(snippet: string): SnippetPartDto[] {
  const parts: SnippetPartDto[] = [];
  let match = false;
  for (const piece of snippet.split(new RegExp(`([${MATCH_START}${MATCH_END}])`, 'u'))) {
    if (piece === MATCH_START || piece === MATCH_END) {
      match = piece === MATCH_START;
    } else if (piece.length > 0) {
      parts.push({ match, text: piece });
    }
  }
  return parts;
}
