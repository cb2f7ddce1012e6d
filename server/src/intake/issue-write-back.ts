import { FORGE_SIGNS, type Forge, type ManagerEvent, type Requirement } from '@libs/contracts';

/**
 * What Agent Manager writes to an issue its Requirement was imported from (issue 49 §3): pure
 * functions from a committed event to the comment it owes. Every comment carries the marker, so
 * the issue's poll records it as the manager's own and never hands it to the agent. Only what the
 * person or the manager wrote goes out under the person's token: the Requirement's title, its
 * branch, a PR's number, a landed commit — never an agent's words (a PR's title or body).
 */

/** Begins every comment the manager writes on an issue (its receipt key follows, see `markerOf`). */
export const ISSUE_WRITE_BACK_MARKER = '<!-- agent-manager:issue';
export const ISSUE_WRITE_BACK_TRIGGER = 'github.issue.write-back';

export type IssueWriteBackAction = 'started' | 'pull_request' | 'landed' | 'cancelled';

/** One comment owed to one issue (and, for a land, the issue's close). */
export interface OwedComment {
  requirementId: string;
  action: IssueWriteBackAction;
  /** The receipt that makes it once, across restarts and runners. */
  receiptKey: string;
  forge: Forge;
  /** `owner/repo`, or GitLab's project path. */
  repository: string;
  /** The issue's web address (its host says which GitLab). */
  url: string;
  number: number;
  body: string;
  close: boolean;
}

/** The comment's own mark: which write it is, so a retry finds it on the issue instead of writing it again. */
export function markerOf(receiptKey: string): string {
  return `${ISSUE_WRITE_BACK_MARKER} ${receiptKey} -->`;
}

/** `acme/widgets#12` (GitLab writes issues with `#` too). */
export function issueName(w: Pick<OwedComment, 'repository' | 'number'>): string {
  return `${w.repository}#${w.number}`;
}

/** The comments these events owe; `withCancel`: a cancellation is written too. */
export function writeBacksOf(events: readonly ManagerEvent[], withCancel: boolean): OwedComment[] {
  const owed: OwedComment[] = [];
  for (const event of events) {
    switch (event.type) {
      case 'run.started': {
        const { requirement, run } = event.payload;
        if (run.role === 'rd') {
          push(owed, requirement, 'started', 'started', startedText(requirement));
        }
        break;
      }
      case 'requirement.updated':
      case 'requirement.completed': {
        const { requirement } = event.payload;
        const landing = requirement.landing;
        if (landing?.landedCommit && landing.landedMethod !== null) {
          push(owed, requirement, 'landed', `landed:${landing.landedCommit}`, landedText(requirement));
        }
        break;
      }
      case 'requirement.cancelled':
        if (withCancel) {
          const { requirement } = event.payload;
          push(
            owed,
            requirement,
            'cancelled',
            'cancelled',
            `Agent Manager stopped working on this issue: Requirement ${plain(requirement.title)} was cancelled.`,
          );
        }
        break;
      default:
        break;
    }
  }
  return owed;
}

/**
 * The comment a PR registered for an imported Requirement owes its issue: the first PR of the
 * issue's repository only (an agent registers what it likes; one comment is all it can cause).
 */
export function pullRequestWriteBack(
  requirement: Pick<Requirement, 'id' | 'source'>,
  pullRequest: { id: string; forge: Forge; repository: string; number: number },
): OwedComment | null {
  if (
    requirement.source === null ||
    pullRequest.forge !== requirement.source.forge ||
    pullRequest.repository.toLowerCase() !== requirement.source.repository.toLowerCase()
  ) {
    return null;
  }
  const what = pullRequest.forge === 'gitlab' ? 'merge request' : 'pull request';
  const owed: OwedComment[] = [];
  push(
    owed,
    requirement,
    'pull_request',
    'pull_request',
    `Agent Manager opened ${what} ${FORGE_SIGNS[pullRequest.forge]}${pullRequest.number} for this issue.`,
  );
  return owed[0] ?? null;
}

function push(
  owed: OwedComment[],
  requirement: Pick<Requirement, 'id' | 'source'>,
  action: IssueWriteBackAction,
  key: string,
  text: string,
): void {
  const source = requirement.source;
  if (source === null) {
    return;
  }
  owed.push({
    action,
    body: `${text}\n\n${markerOf(`${requirement.id}:${key}`)}`,
    close: action === 'landed',
    forge: source.forge,
    number: source.number,
    receiptKey: `${requirement.id}:${key}`,
    repository: source.repository,
    requirementId: requirement.id,
    url: source.url,
  });
}

function startedText(requirement: Requirement): string {
  return `Agent Manager started working on this issue: Requirement ${plain(requirement.title)}.`;
}

function landedText(requirement: Requirement): string {
  const landing = requirement.landing;
  const base = requirement.baseRef?.replace(/^refs\/heads\//, '');
  return `Landed by Agent Manager as commit ${landing.landedCommit}${base ? ` on \`${code(base)}\`` : ''}; closing this issue.`;
}

/** A title as inert text in Markdown: a code span (no mention, link, reference, entity or HTML), one line. */
function plain(text: string): string {
  return `\`${text
    .replace(/[`\s]+/g, ' ')
    .trim()
    .slice(0, 200)}\``;
}

/** A branch name inside backticks: nothing that would end them. */
function code(text: string): string {
  return text.replace(/[`\s]/g, '').slice(0, 200);
}
