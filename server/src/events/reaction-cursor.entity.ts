import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * How far one reaction (a handler of committed events) has got through the event log, per runner:
 * every event of its types up to `eventId` was handled. Written at most once a second and at a
 * clean stop; after a crash the reaction is handed again what came after (at least once).
 */
@Entity('reaction_cursor')
export class ReactionCursorEntity {
  /** The runner the reaction runs on (`local` outside team mode): each runner reacts on its own. */
  @PrimaryColumn('varchar') runner!: string;
  /** `Class.method` of the handler. */
  @PrimaryColumn('varchar') reaction!: string;
  @Column('integer') eventId!: number;
  @Column('varchar') updatedAt!: string;
}
