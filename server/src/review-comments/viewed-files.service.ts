import { Injectable } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { invalid } from '../core/errors/domain-error';
import { RequirementsService } from '../requirements/requirements.service';
import { ListedFile, listChanges } from '../worktrees/worktree-changes';
import { WorktreeChanges } from '../worktrees/worktree-changes.service';
import { MarkViewedDto, ViewedFilesDto } from './dto/viewed-files.dto';
import { ReviewCommentsRepository } from './review-comments.repository';

/** Whose marks these are: the person's stable id (a board's people each have their own), or the owner's. */
const personOf = (actor: EventActor): string => actor.id ?? 'owner';

/**
 * Which changed files a person has viewed (issue 46 §4): a mark keeps the file's content id in the
 * agent's work then, and counts while the file still has it — a change clears it, as on GitHub.
 */
@Injectable()
export class ViewedFiles {
  constructor(
    private readonly changes: WorktreeChanges,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly repository: ReviewCommentsRepository,
    private readonly requirements: RequirementsService,
  ) {}

  /** GET /requirements/:id/viewed-files: every changed file, viewed or not, for the asking person. */
  async list(requirementId: string, actor: EventActor): Promise<ViewedFilesDto> {
    const { files, work } = await this.changedFiles(requirementId);
    const marks = new Map((await this.repository.viewed(requirementId, personOf(actor))).map((m) => [m.path, m]));
    const items = files.map((file) => {
      const mark = marks.get(file.path);
      return { path: file.path, viewed: mark?.blob === file.blob, viewedAt: mark?.viewedAt ?? null };
    });
    return { fileCount: items.length, items, viewedCount: items.filter((i) => i.viewed).length, workSha: work };
  }

  /** PUT /requirements/:id/viewed-files: marks (or unmarks) one changed file viewed as it is now. */
  async mark(requirementId: string, dto: MarkViewedDto, actor: EventActor): Promise<ViewedFilesDto> {
    const { files } = await this.changedFiles(requirementId);
    const file = files.find((f) => f.path === dto.path);
    if (!file) {
      throw invalid('not_in_diff', `${dto.path} is not among the changes of Requirement ${requirementId}`);
    }
    await this.database.write(async (tx) => {
      await this.requirements.loadForWrite(tx, requirementId);
      this.repository.setViewed(
        tx,
        {
          blob: file.blob,
          path: file.path,
          personId: personOf(actor),
          requirementId,
          viewedAt: this.clock.nowIso(),
        },
        dto.viewed,
      );
    });
    return this.list(requirementId, actor);
  }

  private async changedFiles(requirementId: string): Promise<{ files: ListedFile[]; work: string }> {
    const { mergeBase, top, work } = await this.changes.comparison(requirementId);
    return { files: (await listChanges(top, mergeBase, work)).files, work };
  }
}
