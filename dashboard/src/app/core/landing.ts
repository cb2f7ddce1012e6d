import type { Translate } from './i18n';
import type { Requirement } from './api-types';

/** A commit as people write it (git's default abbreviation). */
export const shortSha = (sha: string | null | undefined): string => (sha ?? '').slice(0, 7);

/** Files for a tooltip or a sentence: the first few, then how many more. */
export function fileList(paths: readonly string[], max = 6): string {
  return paths.length <= max ? paths.join(', ') : `${paths.slice(0, max).join(', ')} +${paths.length - max}`;
}

export type RadarChipKind = 'pair' | 'pairs' | 'base' | 'behind' | 'landed';

/** One radar chip on a card: its words, and its detail (files, titles) for the tooltip. */
export interface RadarChip {
  kind: RadarChipKind;
  text: string;
  title: string;
}

/**
 * What the conflict radar says about a card's Requirement, as chips: which other Requirements its
 * work conflicts with (by title, the board's own when it has it), a conflict with its base, how
 * far behind the base it is (only while it still merges: a conflict says more), and its land.
 */
export function radarChips(r: Requirement, t: Translate, titleOf: (id: string) => string | undefined): RadarChip[] {
  const landing = r.landing;
  const chips: RadarChip[] = [];
  // Landed, and nothing new since (new work after a land is radar-checked again like any other).
  if (landing.landedAt !== null && landing.mergesCleanly === null) {
    chips.push({ kind: 'landed', text: t('radar.landed'), title: landed(r, t) });
    return chips;
  }
  const base = r.baseRef ?? r.worktree?.baseRef ?? '';
  const others = landing.conflictsWith.map((c) => ({ paths: c.paths, title: titleOf(c.requirementId) ?? c.title }));
  const [only] = others;
  if (others.length === 1 && only) {
    chips.push({
      kind: 'pair',
      text:
        only.paths.length === 1
          ? t('radar.pairOne', { title: only.title })
          : t('radar.pair', { n: only.paths.length, title: only.title }),
      title: fileList(only.paths),
    });
  } else if (others.length > 1) {
    chips.push({
      kind: 'pairs',
      text: t('radar.pairs', { n: others.length }),
      title: others.map((o) => `${o.title}: ${fileList(o.paths, 3)}`).join('\n'),
    });
  }
  if (landing.mergesCleanly === false) {
    chips.push({
      kind: 'base',
      text: t('radar.base'),
      title: t('radar.baseHint', { base, files: fileList(landing.conflictPaths) }),
    });
  } else if (landing.mergesCleanly === true && (landing.behindBy ?? 0) > 0) {
    const n = landing.behindBy ?? 0;
    chips.push({ kind: 'behind', text: t('radar.behind', { n }), title: t('radar.behindHint', { base, n }) });
  }
  return chips;
}

/** "Landed (squash) as abc1234 at …", or '' before its land. */
export function landed(r: Requirement, t: Translate, when: (iso: string) => string = (iso) => iso): string {
  const l = r.landing;
  if (l.landedAt === null) {
    return '';
  }
  const method = l.landedMethod ? t(`land.method.${l.landedMethod}`) : '';
  return t('land.landed', { commit: shortSha(l.landedCommit), method, time: when(l.landedAt) });
}

export type LandBlock = 'cancelled' | 'inPlace' | 'noBranch' | 'running';

/** Why a land would be refused, where that is known without asking: nothing to land, or a run at work. */
export function landBlock(r: Requirement): LandBlock | null {
  if (r.status === 'cancelled') {
    return 'cancelled';
  }
  if (r.isolation !== 'worktree') {
    return 'inPlace';
  }
  if (!r.worktree?.branch) {
    return 'noBranch';
  }
  return r.session.state === 'running' ? 'running' : null;
}

/** Why it cannot join the merge queue (a run or a missing branch only delays it there). */
export function queueBlock(r: Requirement): LandBlock | null {
  const block = landBlock(r);
  return block === 'cancelled' || block === 'inPlace' ? block : null;
}

/** Refusals the land menu explains in the reader's language (the server's message follows, in English). */
export const REFUSAL_CODES = [
  'land_conflict',
  'worktree_dirty',
  'base_checked_out_dirty',
  'run_active',
  'nothing_to_land',
  'not_landable',
  'base_not_branch',
  'base_moved',
  'head_moved',
  'import_refused',
  'github_remote_missing',
  'github_token_missing',
  'already_queued',
  'requirement_cancelled',
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

export const isRefusalCode = (code: string | null): code is RefusalCode =>
  (REFUSAL_CODES as readonly (string | null)[]).includes(code);
