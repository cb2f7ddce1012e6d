import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { Provider, SessionState } from '@libs/contracts';

/** The RD session a Requirement owns from the moment it exists (one per Requirement). */
@Entity('agent_session')
@Index('idx_agent_session_requirement', ['requirementId'], { unique: true })
@Index('idx_agent_session_created', ['createdAt', 'id'])
@Index('idx_agent_session_state', ['state'])
export class AgentSessionEntity {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('varchar')
  requirementId!: string;

  @Column('varchar')
  provider!: Provider;

  @Column('varchar', { nullable: true })
  nativeSessionId!: string | null;

  @Column('varchar')
  state!: SessionState;

  @Column('text', { nullable: true })
  lastError!: string | null;

  /** Delivery cursor: every deliverable message up to here has been consumed by a successful run. */
  @Column('integer', { default: 0 })
  lastConsumedMessageSequence!: number;

  /**
   * Deliverable messages after the consumed boundary. Kept in step with every append and
   * cursor move in the same transaction, so listing sessions never counts messages.
   */
  @Column('integer', { default: 0 })
  pendingMessageCount!: number;

  /**
   * The last conversation sequence handed out for the Requirement; the next message gets this
   * + 1. Kept here, on the row every append updates anyway, to save a write per message.
   */
  @Column('integer', { default: 0 })
  lastMessageSequence!: number;

  /**
   * When a person's (or an explicit action's) stop paused the session, else null. While set,
   * deliveries are recorded but wake nothing; the next start clears it and takes every pending
   * message. Stored, so a pause outlives a restart.
   */
  @Column('varchar', { nullable: true })
  pausedAt!: string | null;

  @Column('varchar')
  createdAt!: string;

  @Column('varchar')
  updatedAt!: string;
}
