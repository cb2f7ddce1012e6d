import { Injectable } from '@nestjs/common';

import { invalid } from '../core/errors/domain-error';
import { decodeCursor, encodeCursor, pageSize } from '../core/http/pagination';
import { SearchHitDto, SearchPageDto, SearchQueryDto, SnippetPartDto } from './dto/search.dto';
import { MATCH_END, MATCH_START, SearchRepository } from './search.repository';

/** Words per query: each one is an index lookup; more would only cost. */
const TERMS_MAX = 12;
/** How deep a search pages: ranked results past this many are not worth reading. */
const DEPTH_MAX = 500;
/**
 * Matches ranked per search, newest first (see SearchRepository.search): bounds its cost, which
 * is per match ranked (each one's text is read and scored). As deep as a search pages: every
 * result a person can reach is one of these, ranked among them.
 */
const RANK_WINDOW = DEPTH_MAX;

/**
 * `GET /api/search`: every word of the query must occur (in any order, case and accents
 * folded); the last word also matches as a prefix, so results appear while typing. Ranked by
 * bm25 (ts_rank on PostgreSQL), a title counting four times the text, among the newest RANK_WINDOW
 * matches.
 */
@Injectable()
export class SearchService {
  constructor(private readonly repository: SearchRepository) {}

  async search(query: SearchQueryDto): Promise<SearchPageDto> {
    const words = searchWords(query.q);
    const limit = pageSize(query.limit);
    // A ranked list has no stable key to continue after (a new message can outrank the rest), so the cursor is a depth.
    const [skip] = decodeCursor<[number]>(query.cursor, ['number']) ?? [0];
    if (!Number.isInteger(skip) || skip < 0 || skip >= DEPTH_MAX) {
      throw invalid('invalid_cursor', 'cursor is not one this server issued');
    }
    const take = Math.min(limit, DEPTH_MAX - skip);
    const hits = await this.repository.search(words, take + 1, skip, RANK_WINDOW);
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
}

/**
 * The words a person typed: letters, digits and word joiners only (so nothing of a query
 * language can be injected), all of them required; the last one also as a prefix.
 */
export function searchWords(text: string): string[] {
  const words = text
    .split(/[\s"]+/u)
    .map((word) => word.replace(/[^\p{L}\p{N}_'-]+/gu, ''))
    .filter((word) => /[\p{L}\p{N}]/u.test(word));
  if (words.length === 0) {
    throw invalid('invalid_search', 'the search needs at least one word of letters or digits');
  }
  if (words.length > TERMS_MAX) {
    throw invalid('invalid_search', `a search takes at most ${TERMS_MAX} words`);
  }
  return words;
}

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
