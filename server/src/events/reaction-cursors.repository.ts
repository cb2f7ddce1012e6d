import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { ReactionCursorEntity } from './reaction-cursor.entity';

/** The `reaction_cursor` table: how far each reaction of each runner got through the event log. */
@Injectable()
export class ReactionCursorsRepository {
  constructor(private readonly database: Database) {}

  /** Each reaction's cursor on `runner`. */
  async of(runner: string): Promise<Map<string, number>> {
    const rows = await this.database.read(ReactionCursorEntity).findBy({ runner });
    return new Map(rows.map((r) => [r.reaction, Number(r.eventId)]));
  }

  /** Stages a cursor for each reaction that has none on `runner` yet. */
  insertMissing(uow: UnitOfWork, runner: string, reactions: string[], eventId: number, now: string): void {
    for (const reaction of reactions) {
      uow.insert(ReactionCursorEntity, { eventId, reaction, runner, updatedAt: now }, { onConflict: 'ignore' });
    }
  }

  /** Stages the cursors' new positions. */
  move(uow: UnitOfWork, runner: string, cursors: Array<{ reaction: string; position: number }>, now: string): void {
    for (const { reaction, position } of cursors) {
      uow.update(ReactionCursorEntity, { eventId: position, updatedAt: now }, { reaction, runner });
    }
  }
}
