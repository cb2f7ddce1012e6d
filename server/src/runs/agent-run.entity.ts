import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { Provider, ReasoningEffort, RunRole, RunStatus } from '@libs/contracts';

/** One execution of an agent CLI: an RD turn of a session, or a reviewer run. */
@Entity('agent_run')
// One running run per session, enforced by the database (invariant 2).
@Index('idx_run_active_session', ['sessionId'], { unique: true, where: `status = 'running'` })
@Index('idx_run_requirement', ['requirementId', 'startedAt'])
@Index('idx_run_status', ['status'])
@Index('idx_run_started_at', ['startedAt'])
export class AgentRunEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar', { nullable: true }) sessionId!: string | null;
  @Column('varchar') role!: RunRole;
  @Column('varchar') provider!: Provider;
  @Column('varchar', { nullable: true }) model!: string | null;
  @Column('varchar', { nullable: true }) reasoningEffort!: ReasoningEffort | null;
  @Column('varchar') status!: RunStatus;
  @Column('text', { nullable: true }) taskSummary!: string | null;
  @Column('varchar', { nullable: true }) nativeSessionId!: string | null;
  @Column('integer', { nullable: true }) exitCode!: number | null;
  @Column('text', { nullable: true }) error!: string | null;
  /** The captured input boundary (invariant 4): deliverable messages from..to. */
  @Column('integer', { nullable: true }) inputFromSequence!: number | null;
  @Column('integer', { nullable: true }) inputToSequence!: number | null;
  @Column('integer', { nullable: true }) inputTokens!: number | null;
  @Column('integer', { nullable: true }) cachedInputTokens!: number | null;
  @Column('integer', { nullable: true }) outputTokens!: number | null;
  @Column('integer', { nullable: true }) reasoningOutputTokens!: number | null;
  /** What the provider says the run cost, in US dollars (Claude Code reports it; Codex does not). */
  @Column('double precision', { nullable: true }) costUsd!: number | null;
  /** Trace entries written so far (the next one's sequence is this + 1). */
  @Column('integer', { default: 0 }) traceCount!: number;
  /** Identifies the run's processes after a crash: the environment marker, root pid/group and start time. */
  @Column('varchar', { nullable: true }) processMarker!: string | null;
  @Column('integer', { nullable: true }) processId!: number | null;
  @Column('integer', { nullable: true }) processGroupId!: number | null;
  @Column('varchar', { nullable: true }) processStartTime!: string | null;
  @Column('varchar') startedAt!: string;
  @Column('varchar', { nullable: true }) finishedAt!: string | null;
  @Column('varchar') updatedAt!: string;
}
