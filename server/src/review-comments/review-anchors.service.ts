import { Inject, Injectable, Logger } from '@nestjs/common';

import { ManagerEvent, ReviewCommentSide } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { DomainError, invalid } from '../core/errors/domain-error';
import { EventLog } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { RUNTIME, Runtime } from '../core/runtime';
import { RequirementsService } from '../requirements/requirements.service';
import { fileDiff, listChanges, worktreeRelativePath } from '../worktrees/worktree-changes';
import { WorktreeChanges } from '../worktrees/worktree-changes.service';
import { excerptOf, linesShown } from './diff-lines';
import { publishComments } from './published-comments';
import { Reanchoring, reanchor } from './reanchor';
import { ReviewCommentEntity } from './review-comment.entities';
import { ReviewCommentsRepository } from './review-comments.repository';

/** The longest quote a comment may keep: a range of very long lines is refused, not stored. */
const EXCERPT_MAX_BYTES = 16 * 1024;
/** Comments per `review_comments.updated` event of a re-anchoring pass. */
const PUBLISHED_PER_EVENT = 50;
/** What a comment's path may not hold: it is quoted on a line of the person's review message. */
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Where review comments sit in the code: a new comment's anchor (the lines its Requirement's diff
 * shows on that side, quoted, and the commit they were read from), and every comment moved with
 * its lines — or outdated — after each import of the agent's work (issue 46 §3).
 */
@Injectable()
export class ReviewAnchors {
  private readonly logger = new Logger(ReviewAnchors.name);
  /** The re-anchoring pass running per Requirement, and whether another was asked for meanwhile. */
  private readonly passes = new Map<string, { again: boolean; done: Promise<number> }>();

  constructor(
    private readonly changes: WorktreeChanges,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly repository: ReviewCommentsRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  /**
   * Where a new comment is anchored: the file among the Requirement's changes (by its path on
   * that side), the lines its diff shows there, and the commit they were read from.
   */
  async anchorOf(
    requirementId: string,
    file: string,
    side: ReviewCommentSide,
    line: number,
    endLine: number,
  ): Promise<{ commit: string; excerpt: string; path: string }> {
    const path = worktreeRelativePath(file);
    const notInDiff = (what: string) => invalid('not_in_diff', what);
    if (path === null || CONTROL.test(path)) {
      throw notInDiff(`${JSON.stringify(file)} is not a path inside the repository that a comment can name`);
    }
    const { mergeBase, top, work } = await this.changes.comparison(requirementId);
    const { files } = await listChanges(top, mergeBase, work);
    const changed = files.find((f) =>
      side === 'new'
        ? f.path === path && f.status !== 'deleted'
        : (f.oldPath ?? f.path) === path && f.status !== 'added',
    );
    if (!changed) {
      throw notInDiff(`${path} is not among the changes of Requirement ${requirementId} (side ${side})`);
    }
    const { diff, truncated } = await fileDiff(top, mergeBase, work, changed.path, changed.oldPath);
    if (truncated) {
      throw invalid('diff_too_large', `the diff of ${path} is too large to comment on (over 2 MiB)`);
    }
    const excerpt = excerptOf(linesShown(diff, side), line, endLine);
    const range = endLine === line ? `line ${line}` : `lines ${line}–${endLine}`;
    if (excerpt === null) {
      throw notInDiff(`${range} of ${path} (side ${side}) are not in its diff`);
    }
    if (Buffer.byteLength(excerpt, 'utf8') > EXCERPT_MAX_BYTES) {
      throw invalid('range_too_long', `${range} of ${path} hold over ${EXCERPT_MAX_BYTES} bytes: comment on fewer`);
    }
    return { commit: side === 'new' ? work : mergeBase, excerpt, path };
  }

  /**
   * After an import of the agent's work (its `requirement.updated`), the comments of that
   * Requirement follow the code: moved with their lines, or outdated where the lines changed.
   * Idempotent: a comment already on the imported commit is left alone.
   */
  @OnCommitted(['requirement.updated'])
  async followImports(events: ManagerEvent[]): Promise<void> {
    const own = this.runtime.board?.runnerId ?? null;
    // The latest import each event names, of the Requirements whose work is in this runner's repository.
    const imported = new Map<string, string>();
    for (const event of events) {
      if (event.type !== 'requirement.updated' || !event.requirementId) {
        continue;
      }
      const { runner, worktree } = event.payload.requirement;
      if (worktree?.workSha && (own === null || runner === null || runner.id === own)) {
        imported.set(event.requirementId, worktree.workSha);
      }
    }
    for (const [requirementId, work] of imported) {
      await this.follow(requirementId, work).catch((err: unknown) =>
        // A Requirement whose work cannot be compared now (removed, its base gone) keeps its
        // threads where they are; the next import tries again. Nothing after it waits.
        this.logger.warn({ error: (err as Error).message, msg: 'review comments not re-anchored', requirementId }),
      );
    }
  }

  /**
   * Re-anchors a Requirement's comments on its last import; resolves with how many changed. One
   * pass per Requirement at a time: a call during a pass asks for one more after it (the import it
   * saw may be newer than the one the running pass read). `seen`: the import the event named —
   * when every comment is already on it (and none is on the merge base's side), there is nothing
   * to ask git (most `requirement.updated` events are not imports).
   */
  async follow(requirementId: string, seen?: string): Promise<number> {
    const rows = await this.repository.anchored(requirementId);
    if (rows.every((row) => row.side === 'new' && row.anchorCommit === seen)) {
      return 0;
    }
    const running = this.passes.get(requirementId);
    if (running) {
      running.again = true;
      return running.done;
    }
    const pass = { again: false, done: Promise.resolve(0) };
    pass.done = (async () => {
      let changed = 0;
      try {
        do {
          pass.again = false;
          changed += await this.pass(requirementId);
        } while (pass.again);
      } finally {
        this.passes.delete(requirementId);
      }
      return changed;
    })();
    this.passes.set(requirementId, pass);
    return pass.done;
  }

  private async pass(requirementId: string): Promise<number> {
    const rows = await this.repository.anchored(requirementId);
    if (rows.length === 0) {
      return 0;
    }
    let moves: Reanchoring[];
    try {
      const compared = await this.changes.comparison(requirementId, true);
      moves = await reanchor(compared, rows);
    } catch (err) {
      if (err instanceof DomainError) {
        return 0; // nothing to compare (no worktree, base gone): the threads stay as they are
      }
      throw err;
    }
    if (moves.length === 0) {
      return 0;
    }
    return this.database.write(async (tx) => {
      const found = await this.requirements.loadForWrite(tx, requirementId);
      const current = new Map((await this.repository.ofRequirementIn(tx, requirementId)).map((r) => [r.id, r]));
      const changed: ReviewCommentEntity[] = [];
      const now = this.clock.nowIso();
      for (const move of moves) {
        const row = current.get(move.id);
        // Moved, outdated or deleted since it was read: the newer answer stands (a state change does not matter here).
        if (!row || row.anchorCommit !== move.from || row.outdated) {
          continue;
        }
        const set: Partial<ReviewCommentEntity> =
          move.to === 'outdated'
            ? { outdated: true, updatedAt: now }
            : { anchorCommit: move.to.commit, endLine: move.to.endLine, line: move.to.line };
        Object.assign(row, set);
        this.repository.update(tx, row.id, set);
        changed.push(row);
      }
      // A bounded event each (a thread carries its quote and replies).
      for (let at = 0; at < changed.length; at += PUBLISHED_PER_EVENT) {
        const batch = changed.slice(at, at + PUBLISHED_PER_EVENT);
        await publishComments(this.events, this.repository, tx, found, batch, { id: null, kind: 'system' });
      }
      return changed.length;
    });
  }
}
