import { SYSTEM_MESSAGE_CODES } from '@libs/contracts';

import type { I18n } from '../core/i18n';
import type { MessageKey } from '../core/i18n-messages';
import type { Message } from '../core/api-types';

type Args = Record<string, string | number | boolean | null | undefined>;
type Loose = (key: MessageKey, params?: Record<string, string | number>) => string;

// The codes this build renders: the shared list (a newer server's unknown code shows its body).
const CODES: ReadonlySet<string> = new Set(SYSTEM_MESSAGE_CODES);

const str = (v: Args[string]): string => (v === null || v === undefined ? '' : String(v));
/** Cents, and hundredths of a cent below one cent (as the server writes them). */
const dollars = (n: number): string => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/**
 * What a message Agent Manager wrote says, in the reader's language (issue 26 §13): its code and
 * arguments through the catalogue. Null for people's and agents' messages, for messages older than
 * codes, and for a code this build does not know (a newer server): those show their English body.
 */
export function systemText(m: Pick<Message, 'code' | 'args'>, i18n: I18n): string | null {
  const code = m.code;
  if (!code || !CODES.has(code)) {
    return null;
  }
  const t = i18n.t as unknown as Loose;
  const a = (m.args ?? {}) as Args;
  const n = (v: Args[string]) => (typeof v === 'number' ? v.toLocaleString(i18n.locale()) : str(v));
  const named = str(a['title']) || str(a['requirementId']);
  switch (code) {
    case 'run.failed':
      return t('sys.run.failed', { error: str(a['error']) });
    case 'run.timed_out':
      return t('sys.run.timed_out', { seconds: n(a['seconds']) });
    case 'budget.reached':
    case 'budget.reached_ancestor': {
      const spent = [
        a['maxTokens'] === null || a['maxTokens'] === undefined
          ? t('sys.budget.tokens', { n: n(a['tokens']) })
          : t('sys.budget.tokensOf', { max: n(a['maxTokens']), n: n(a['tokens']) }),
      ];
      const cost = typeof a['costUsd'] === 'number' ? dollars(a['costUsd']) : null;
      if (typeof a['maxCostUsd'] === 'number') {
        spent.push(t('sys.budget.costOf', { cost: cost ?? t('sys.budget.noCost'), max: dollars(a['maxCostUsd']) }));
      } else if (cost) {
        spent.push(cost);
      }
      const stopped = a['runStopped'] ? t('sys.budget.stopped') : '';
      const joined = spent.join(i18n.language() === 'zh-CN' ? '，' : ', ');
      if (code === 'budget.reached_ancestor') {
        return t('sys.budget.reached_ancestor', { spent: joined, stopped, title: named });
      }
      const below = typeof a['below'] === 'number' && a['below'] > 0 ? t('sys.budget.below', { n: n(a['below']) }) : '';
      return t('sys.budget.reached', { below, spent: joined, stopped });
    }
    case 'dependency.met':
      return a['merged']
        ? t('sys.dependency.merged', { merged: str(a['merged']), title: named })
        : t('sys.dependency.met', { title: named });
    case 'dependency.cancelled':
      return t('sys.dependency.cancelled', { title: named });
    case 'timer.fired':
      return a['schedule'] === 'recurring' && typeof a['intervalSeconds'] === 'number'
        ? t('sys.timer.firedRecurring', {
            description: str(a['description']),
            interval: i18n.interval(a['intervalSeconds']),
          })
        : t('sys.timer.fired', { description: str(a['description']) });
    case 'github.pr_status':
    case 'gitlab.mr_status':
      return t(code === 'github.pr_status' ? 'sys.github.pr_status' : 'sys.gitlab.mr_status', {
        pr: str(a['pullRequest']),
        previous: prStatus(t, a['previousStatus']),
        status: prStatus(t, a['status']),
        title: str(a['title']),
      });
    case 'github.pr_head':
    case 'gitlab.mr_head':
      return t(code === 'github.pr_head' ? 'sys.github.pr_head' : 'sys.gitlab.mr_head', {
        head: str(a['headSha']),
        pr: str(a['pullRequest']),
        previous: str(a['previousHeadSha']),
        title: str(a['title']),
      });
    case 'github.ci_failed':
    case 'gitlab.ci_failed': {
      const outcome = str(a['outcome']);
      const word = t(`sys.ci.${outcome}` as MessageKey);
      return t(code === 'github.ci_failed' ? 'sys.github.ci_failed' : 'sys.gitlab.ci_failed', {
        check: str(a['check']),
        head: str(a['headSha']),
        outcome: word.startsWith('sys.') ? outcome.toLowerCase() : word,
        pr: str(a['pullRequest']),
      });
    }
    case 'github.conflict':
    case 'gitlab.conflict':
      return t(code === 'github.conflict' ? 'sys.github.conflict' : 'sys.gitlab.conflict', {
        base: str(a['baseBranch']),
        head: str(a['headSha']),
        pr: str(a['pullRequest']),
      });
    case 'github.issue_write_back_failed':
    case 'gitlab.issue_write_back_failed':
      return t(
        code === 'github.issue_write_back_failed'
          ? 'sys.github.issue_write_back_failed'
          : 'sys.gitlab.issue_write_back_failed',
        {
          action: str(a['action']),
          issue: str(a['issue']),
          reason: str(a['reason']),
        },
      );
    case 'landing.conflict':
    case 'landing.rebase_requested':
      return t(code === 'landing.conflict' ? 'sys.landing.conflict' : 'sys.landing.rebase_requested', {
        base: str(a['base']),
        baseRef: str(a['baseRef']),
        count: n(a['count']),
        paths: str(a['paths']),
      });
    case 'review.failed':
      return t('sys.review.failed', { error: str(a['error']), head: str(a['headSha']), pr: str(a['pullRequest']) });
    case 'review.cancelled':
      return t('sys.review.cancelled', { head: str(a['headSha']), pr: str(a['pullRequest']) });
    case 'review_loop.clean':
      return t('sys.review_loop.clean', { head: str(a['headSha']), pr: str(a['pullRequest']), round: n(a['round']) });
    case 'review_loop.max_rounds':
      return t('sys.review_loop.max_rounds', {
        max: n(a['maxRounds']),
        pr: str(a['pullRequest']),
        round: n(a['round']),
      });
    case 'requirement.moved': {
      const runner = (person: Args[string], host: Args[string]) =>
        person
          ? t('sys.requirement.moved.runner', { host: str(host), person: str(person) })
          : t('sys.requirement.moved.gone');
      const lost = a['orphanedRunId'] ? t('sys.requirement.moved.lost', { run: str(a['orphanedRunId']) }) : '';
      const branch = !a['branch']
        ? ''
        : a['commit']
          ? t('sys.requirement.moved.fetched', { branch: str(a['branch']), commit: str(a['commit']) })
          : t('sys.requirement.moved.notFetched', { branch: str(a['branch']), reason: str(a['reason']) });
      return t('sys.requirement.moved', {
        branch,
        from: runner(a['fromPerson'], a['fromHost']),
        lost,
        to: runner(a['toPerson'], a['toHost']),
      });
    }
    case 'requirement.rewound': {
      const note = a['note'] ? t('sys.requirement.rewound.note', { note: str(a['note']) }) : '';
      return t(a['run'] ? 'sys.requirement.rewound.run' : 'sys.requirement.rewound', {
        checkpoint: str(a['checkpoint']),
        note,
        run: str(a['run']),
        saved: str(a['saved']),
      });
    }
    default:
      return t(`sys.${code}` as MessageKey);
  }
}

function prStatus(t: Loose, status: Args[string]): string {
  const s = str(status);
  const word = t(`pr.${s}` as MessageKey);
  return word.startsWith('pr.') ? s : word;
}

/**
 * Where a trigger's message came from, as a person reads it: "a timer", "GitHub · CI", never the
 * internal trigger id ("requirement.dependency"). An unknown one shows its source only.
 */
export function sourceText(m: Pick<Message, 'source' | 'triggerId'>, i18n: I18n): string {
  const t = i18n.t as unknown as Loose;
  for (const id of [m.triggerId, m.source]) {
    if (id) {
      const label = t(`source.${id}` as MessageKey);
      if (!label.startsWith('source.')) {
        return label;
      }
    }
  }
  return m.source ?? '';
}
