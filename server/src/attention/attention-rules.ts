import type { AttentionReason, LandingQueueItem, Requirement } from '@libs/contracts';

import { personText } from '../core/person';

/** What the rules read besides the Requirement's snapshot, each from the feature that owns it. */
export interface AttentionFacts {
  requirement: Requirement;
  /** The agent's latest message in the conversation (its body and time), or null. */
  lastAgentMessage: { body: string; createdAt: string } | null;
  /** The latest CI failure delivered to it (GitHub), or null. */
  lastCiFailure: { sequence: number; body: string; createdAt: string } | null;
  /** Its place in the merge queue, or null when it is not queued. */
  queueItem: LandingQueueItem | null;
  /** Hosts its latest run was refused that are still not allowed, most recent first. */
  refused: Array<{ host: string; port: number; count: number; firstAt: string }>;
}

/** One reason, as the rules find it: the attention feature keeps the item (and its id) while it holds. */
export interface AttentionFinding {
  reason: AttentionReason;
  /** When the cause began, as far as the state says. */
  since: string;
  summary: string;
}

/**
 * Why a Requirement needs its person now (issue 47 §1): a pure function of its state, so an item
 * clears exactly when its cause stops being true (a reply starts a run, a raised budget clears
 * the pause, a land removes the conflict). At most one of `waiting_reply`, `review_ready` and
 * `confirm_done`: they are three readings of the same rest after a run.
 */
export function attentionFindings(facts: AttentionFacts): AttentionFinding[] {
  const r = facts.requirement;
  if (r.status === 'done' || r.status === 'cancelled') {
    return [];
  }
  const found: AttentionFinding[] = [];
  const add = (reason: AttentionReason, since: string | null, summary: string) =>
    found.push({ reason, since: since ?? r.updatedAt, summary: oneLine(summary) });
  const running = r.session.state === 'running';
  const resting = r.status === 'waiting_confirmation';

  if (r.budgetReachedAt !== null) {
    add('budget_reached', r.budgetReachedAt, 'Its budget was reached: raise it or start it to go on.');
  }
  for (const d of r.dependsOn ?? []) {
    if (d.state === 'cancelled' && !running) {
      add('dependency_cancelled', d.resolvedAt, `It waits for ${d.requirementId}, which was cancelled.`);
      break;
    }
  }
  if (r.runner !== null && !r.runner.online && running) {
    add('runner_offline', null, `Its runner on ${r.runner.host} (${r.runner.person}) is offline.`);
  }
  if (resting && r.session.state === 'failed' && r.budgetReachedAt === null) {
    add('run_failed', r.session.updatedAt, `Its run failed: ${r.session.lastError ?? 'no reason given'}`);
  }
  if (resting && r.session.state === 'waiting_human' && r.budgetReachedAt === null) {
    const rest = restReason(facts);
    add(rest.reason, rest.since ?? r.session.updatedAt, rest.summary);
  }
  const ci = facts.lastCiFailure;
  if (ci !== null && !running && ci.sequence > r.session.lastConsumedMessageSequence) {
    add('ci_failed', ci.createdAt, ci.body);
  }
  const landing = r.landing;
  const landed = landing.landedWork !== null && landing.landedWork === (r.worktree?.workSha ?? r.worktree?.headSha);
  if ((landing.mergesCleanly === false || landing.conflictsWith.length > 0) && !landed) {
    const other = landing.conflictsWith[0];
    add(
      'conflict',
      landing.checkedAt,
      landing.conflictPaths.length > 0
        ? `Its work conflicts with ${r.baseRef ?? 'its base'} in ${listed(landing.conflictPaths)}.`
        : other
          ? `Its work conflicts with “${other.title}” in ${listed(other.paths)}.`
          : 'Its work conflicts with its base.',
    );
  }
  const queued = facts.queueItem;
  // Tried again, it keeps its reason while it lands: still waiting until the attempt answers.
  if (queued?.state === 'paused' || (queued?.state === 'landing' && queued.reason !== null)) {
    if (queued.conflictPaths.length > 0) {
      add(
        'queue_blocked',
        null,
        `The merge queue waits for it: it conflicts in ${listed(queued.conflictPaths)}${running ? '' : ' — start it to let it rebase'}.`,
      );
    } else {
      add('land_refused', null, `The merge queue could not land it: ${queued.reason ?? 'refused'}`);
    }
  }
  if (facts.refused.length > 0 && !running) {
    const first = facts.refused[facts.refused.length - 1];
    const hosts = facts.refused.slice(0, 3).map((b) => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`);
    add(
      'network_blocked',
      first?.firstAt ?? null,
      `Its run was refused ${hosts.join(', ')}${facts.refused.length > 3 ? ` and ${facts.refused.length - 3} more` : ''}: allow a host if it needs it.`,
    );
  }
  return found;
}

/** A Requirement at rest after a run: a question for the person, work to review, or an answer to confirm. */
function restReason(facts: AttentionFacts): { reason: AttentionReason; since: string | null; summary: string } {
  const r = facts.requirement;
  const said = facts.lastAgentMessage;
  if (r.session.pausedAt !== null && r.session.pendingMessageCount > 0) {
    return {
      reason: 'confirm_done',
      since: r.session.pausedAt,
      summary: `Paused with ${r.session.pendingMessageCount} message(s) waiting: start it to go on, or confirm it done.`,
    };
  }
  if (said !== null && asks(said.body)) {
    return { reason: 'waiting_reply', since: said.createdAt, summary: lastLine(said.body) };
  }
  const w = r.worktree;
  const work = w?.workSha ?? w?.headSha ?? null;
  if (w !== null && (w.ahead > 0 || w.dirty) && work !== r.landing.landedWork) {
    return {
      reason: 'review_ready',
      since: said?.createdAt ?? null,
      summary: `Its work is ready for review: ${w.ahead} commit(s) ahead${w.dirty ? ', with uncommitted changes' : ''}.`,
    };
  }
  return {
    reason: 'confirm_done',
    since: said?.createdAt ?? null,
    summary: said === null ? 'Its run ended: confirm it done or reply.' : lastLine(said.body),
  };
}

/** The agent's answer ends with a question for the person (its last line does). */
export function asks(body: string): boolean {
  return /\?\s*[*_`)"'”’]*\s*$/.test(lastLine(body, Number.MAX_SAFE_INTEGER));
}

function lastLine(body: string, max = 200): string {
  const lines = body
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  return oneLine(lines[lines.length - 1] ?? '', max);
}

/** Terminal escapes (colours, cursor moves): what an agent wrote may hold them. */
const ESCAPES = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-_]/g;

/** One line of plain text (escapes and controls gone, as a name on a board), at most `max` characters. */
function oneLine(text: string, max = 300): string {
  return personText(text.replace(ESCAPES, ''), max);
}

function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, 3).join(', ');
  return paths.length > 3 ? `${shown} and ${paths.length - 3} more` : shown;
}
