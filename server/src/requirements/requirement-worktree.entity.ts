import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { IsolationMode, WorktreeLayout } from '@libs/contracts';

/** Ports are reserved in blocks of this many per Requirement (AGENT_MANAGER_PORT is the first). */
export const WORKTREE_PORT_BLOCK = 10;

/**
 * Where one Requirement's agent works (issue 14): written when the Requirement is created (its
 * isolation and base ref), filled in when its first run creates the worktree, refreshed after
 * every run. Its own table, so the `requirement` row stays what it was.
 */
@Entity('requirement_worktree')
@Index('idx_requirement_worktree_port', ['portBase'], { unique: true, where: 'port_base IS NOT NULL' })
@Index('idx_requirement_worktree_path', ['path'])
export class RequirementWorktreeEntity {
  @PrimaryColumn('varchar') requirementId!: string;
  @Column('varchar') isolation!: IsolationMode;
  /** The ref the branch starts from: asked for on create, else the branch checked out then. */
  @Column('varchar', { nullable: true }) baseRef!: string | null;
  /** The worktree's top directory; set before git creates it, so a crash mid-creation is found again. */
  @Column('varchar', { nullable: true }) path!: string | null;
  /** Chosen (and recorded) before git creates it, for the same reason. */
  @Column('varchar', { nullable: true }) branch!: string | null;
  /** The agent's folder inside the worktree (a monorepo's package), fixed at creation: a resumed session keeps its cwd. */
  @Column('varchar', { nullable: true }) subdirectory!: string | null;
  @Column('varchar', { nullable: true }) baseSha!: string | null;
  /** The Requirement's branch as last imported into the person's repository (or read there, for a linked worktree). */
  @Column('varchar', { nullable: true }) headSha!: string | null;
  /** How the working copy is made: set when it is (null before, and in place). */
  @Column('varchar', { nullable: true }) layout!: WorktreeLayout | null;
  /** The last import's snapshot: headSha with the uncommitted and untracked files on top (headSha when clean). */
  @Column('varchar', { nullable: true }) workSha!: string | null;
  /** Why the last import was refused, or null when it was taken. */
  @Column('varchar', { nullable: true }) importError!: string | null;
  @Column('integer') ahead!: number;
  @Column('integer') behind!: number;
  @Column('boolean') dirty!: boolean;
  /** The first of the WORKTREE_PORT_BLOCK ports reserved for this Requirement (AGENT_MANAGER_PORT); unique while set. */
  @Column('integer', { nullable: true }) portBase!: number | null;
  /** When git finished creating the worktree (null: not yet, or a creation that died). */
  @Column('varchar', { nullable: true }) createdAt!: string | null;
  /** When the setup command succeeded in this worktree (null: still to run). */
  @Column('varchar', { nullable: true }) setupAt!: string | null;
  @Column('varchar', { nullable: true }) lastRunAt!: string | null;
  @Column('varchar', { nullable: true }) removedAt!: string | null;
  @Column('varchar', { nullable: true }) refreshedAt!: string | null;
  @Column('varchar') updatedAt!: string;
}
