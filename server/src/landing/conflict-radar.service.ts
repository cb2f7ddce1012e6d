import * as path from 'node:path';

import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';

import type { ConflictPair, ManagerEvent, ConflictRadar as Radar, RequirementConflict } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { git } from '../core/git/git';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementLandingEntity } from '../requirements/requirement-landing.entity';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import '../runs/run.events';
import {
  aheadBehind,
  branchesContaining,
  changedPaths,
  commitTree,
  fastForwardCommits,
  mergeTrees,
} from './landing-git';
import { RadarCandidate, LandingRepository } from './landing.repository';
import { listed } from './land-steps';

/** The trigger whose messages tell an agent that a move of its base made its work conflict. */
export const BASE_CONFLICT_TRIGGER = 'landing.base-conflict';
/** How often the radar looks for moves nobody announced (a person's commit on the base, a branch moved by hand). */
const POLL_MS = 5_000;
/** git processes at once: the machine's cores are the agents' first. */
const CONCURRENCY = 2;
/** Answers kept per cache before it is emptied (each is a few hundred bytes). */
const CACHE_MAX = 20_000;
/** A base move of more commits than this is not worth carrying answers across: they are computed afresh. */
const MOVE_MAX = 1_000;

/** The radar's answer for one piece of work on one base commit (pure: the commits decide it). */
interface WorkAnswer {
  /** Nothing to land: the base already has all of it. */
  landed: boolean;
  clean: boolean;
  conflictPaths: string[];
  behindBy: number;
  /** What pairs are merged with: the work as it would land (clean), else the work itself. */
  pairCommit: string;
  /** The files its landing changes, and every folder above them (a file against a folder conflicts too). */
  files: Set<string>;
  folders: Set<string>;
}

/** How the base moved between two passes (a fast-forward): its new commits, and the files they changed. */
interface BaseMove {
  commits: number;
  files: Set<string>;
  folders: Set<string>;
  /** Branch heads whose history already holds one of the new commits. */
  containing: Set<string>;
}

interface Looked {
  candidate: RadarCandidate;
  base: string;
  work: string;
  answer: WorkAnswer;
}

function foldersOf(files: Iterable<string>): Set<string> {
  const folders = new Set<string>();
  for (const file of files) {
    for (
      let dir = path.posix.dirname(file);
      dir !== '.' && dir !== '/' && !folders.has(dir);
      dir = path.posix.dirname(dir)
    ) {
      folders.add(dir);
    }
  }
  return folders;
}

/** Whether two changes touch a common file, or a file where the other has a folder: only then can their merge conflict. */
function mayConflict(a: Pick<WorkAnswer, 'files' | 'folders'>, b: Pick<WorkAnswer, 'files' | 'folders'>): boolean {
  const [small, large] = a.files.size <= b.files.size ? [a, b] : [b, a];
  for (const file of small.files) {
    if (large.files.has(file) || large.folders.has(file)) {
      return true;
    }
  }
  for (const file of large.files) {
    if (small.folders.has(file)) {
      return true;
    }
  }
  return false;
}

/** Whether a change touches `file`, or a folder of that name. */
function touches(answer: WorkAnswer, file: string): boolean {
  return answer.files.has(file) || answer.folders.has(file);
}

async function inPool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next];
        next += 1;
        await work(item);
      }
    }),
  );
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const sameConflicts = (a: readonly RequirementConflict[], b: readonly RequirementConflict[]) =>
  a.length === b.length &&
  a.every((x, i) => x.requirementId === b[i].requirementId && x.title === b[i].title && sameList(x.paths, b[i].paths));

/**
 * The conflict radar (issue 28 §2): for every live Requirement with work of its own — commits on
 * its branch, and uncommitted changes in its worktree — whether that work merges cleanly onto its
 * base's current commit, how far behind it is, and which other Requirements' work it conflicts
 * with, file by file. Computed on git objects only (`merge-tree`), never in a checkout.
 *
 * Incremental by construction: an answer is a pure function of commits, so each is cached under
 * the commits it was computed from, and a pass recomputes only those whose inputs moved (a run
 * changes one Requirement's work: its base answer and its pairs; a land moves the base forward:
 * the answers of the work whose files it touched, and their pairs — the others are carried over).
 * Work on the base's current commit needs no merge at all. A pair is merged only when the two
 * changes touch a common file or folder; everything else cannot conflict. Passes never overlap:
 * one asked for while another runs is folded into one more pass after it.
 */
@Injectable()
export class ConflictRadar implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ConflictRadar.name);
  private readonly answers = new Map<string, WorkAnswer>();
  private readonly pairs = new Map<string, string[]>();
  /** Each Requirement's last answer and what it was for: a base move carries it over when it cannot change it. */
  private readonly previous = new Map<string, { base: string; work: string; answer: WorkAnswer }>();
  private current: Radar = { checkedAt: null, pairs: [], requirements: [] };
  private running: Promise<void> | null = null;
  private again = false;
  private lastSignature = '';
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Each candidate's `refreshedAt` as the last pass read it. */
  private readAt = new Map<string, string | null>();

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly repository: LandingRepository,
    private readonly requirements: RequirementsService,
    private readonly triggers: TriggerDeliveryService,
    private readonly workspace: WorkspaceGit,
  ) {}

  onApplicationBootstrap(): void {
    void this.refresh();
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) {
      clearInterval(this.timer);
    }
  }

  /** The last answer, after the pass running now (or a first one) finished. */
  async radar(): Promise<Radar> {
    if (this.running) {
      await this.running;
    } else if (this.current.checkedAt === null) {
      await this.refresh();
    }
    return this.current;
  }

  /**
   * A Requirement's work was read again (after a run, a land, on demand: its worktree's
   * `refreshedAt` moved past what the last pass saw): look again. A pass's own writes carry the
   * time it saw, so they ask for nothing.
   */
  @OnCommitted(['requirement.updated'])
  async workRead(events: ManagerEvent[]): Promise<void> {
    const moved = events.some((event) => {
      if (event.type !== 'requirement.updated') {
        return false;
      }
      const { requirement } = event.payload;
      const read = requirement.worktree?.refreshedAt ?? null;
      // Only a candidate's work (a branch of its own, not cancelled: LandingRepository.candidates),
      // and only read later than the last pass saw it (events handed again after a restart carry
      // older times).
      return (
        read !== null &&
        requirement.status !== 'cancelled' &&
        requirement.worktree?.mode === 'worktree' &&
        requirement.worktree.branch !== null &&
        read > (this.readAt.get(requirement.id) ?? '')
      );
    });
    if (moved) {
      await this.refresh();
    }
  }

  /** Looks again; resolves once a pass that started after this call has finished. */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running.then(() => this.running ?? undefined);
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pass().catch((err: unknown) =>
            this.logger.warn(`the conflict radar could not look: ${(err as Error).message}`),
          );
        } while (this.again && !this.stopped);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Cheap check for moves nobody announced: the candidates and every ref they name, in two reads. */
  private async poll(): Promise<void> {
    if (this.running || this.stopped) {
      return;
    }
    try {
      const candidates = await this.repository.candidates();
      if (candidates.length === 0 && this.current.requirements.length === 0 && this.current.pairs.length === 0) {
        return; // nothing to look at, and nothing shown: no git at all
      }
      const repo = await this.workspace.gitWorkspace();
      if (repo === null) {
        return;
      }
      const refs = await this.refs(repo.top);
      const signature = JSON.stringify(
        candidates.map((c) => [
          c.requirementId,
          c.status,
          refs.get(`refs/heads/${c.branch}`),
          c.baseRef && refs.get(`refs/heads/${c.baseRef}`),
          c.refreshedAt,
        ]),
      );
      if (signature !== this.lastSignature) {
        await this.refresh();
      }
    } catch (err) {
      this.logger.debug(`radar poll: ${(err as Error).message}`);
    }
  }

  private async refs(top: string): Promise<Map<string, string>> {
    const out = await git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/'], {
      cwd: top,
      maxBytes: 64 * 1024 * 1024,
      timeoutMs: 30_000,
    });
    const refs = new Map<string, string>();
    for (const line of out.stdout.split('\n')) {
      const space = line.indexOf(' ');
      if (space > 0) {
        refs.set(line.slice(space + 1), line.slice(0, space));
      }
    }
    return refs;
  }

  private async pass(): Promise<void> {
    const started = performance.now();
    const repo = await this.workspace.gitWorkspace();
    if (repo === null) {
      return;
    }
    const top = repo.top;
    const candidates = await this.repository.candidates();
    this.readAt = new Map(candidates.map((c) => [c.requirementId, c.refreshedAt]));
    const refs = await this.refs(top);
    this.lastSignature = JSON.stringify(
      candidates.map((c) => [
        c.requirementId,
        c.status,
        refs.get(`refs/heads/${c.branch}`),
        c.baseRef && refs.get(`refs/heads/${c.baseRef}`),
        c.refreshedAt,
      ]),
    );
    if (this.answers.size > CACHE_MAX) {
      this.answers.clear();
    }
    if (this.pairs.size > CACHE_MAX) {
      this.pairs.clear();
    }
    const looked: Looked[] = [];
    const unchecked: RadarCandidate[] = [];
    let answered = 0;
    let carried = 0;
    let merged = 0;
    const baseOf = new Map<string, string | null>();
    const moves = new Map<string, Promise<BaseMove | null>>();
    const live = new Set(candidates.map((c) => c.requirementId));
    for (const id of this.previous.keys()) {
      if (!live.has(id)) {
        this.previous.delete(id);
      }
    }
    const gitStarted = performance.now();
    await inPool(candidates, CONCURRENCY, async (candidate) => {
      const head = refs.get(`refs/heads/${candidate.branch}`);
      const baseRef = candidate.baseRef;
      let base: string | null = baseRef === null ? null : (refs.get(`refs/heads/${baseRef}`) ?? null);
      if (base === null && baseRef !== null) {
        if (!baseOf.has(baseRef)) {
          baseOf.set(baseRef, await this.workspace.resolveCommit(top, baseRef));
        }
        base = baseOf.get(baseRef) ?? null;
      }
      if (head === undefined || base === null) {
        unchecked.push(candidate);
        return;
      }
      const work = this.workOf(candidate, head);
      const key = `${base}:${work}`;
      let answer = this.answers.get(key);
      if (!answer) {
        answered += 1;
        const kept = await this.carried(top, candidate.requirementId, head, base, work, moves);
        carried += kept === null ? 0 : 1;
        answer = kept ?? (await this.answer(top, base, work));
        this.answers.set(key, answer);
      }
      this.previous.set(candidate.requirementId, { answer, base, work });
      if (answer.landed) {
        unchecked.push(candidate);
        return;
      }
      looked.push({ answer, base, candidate, work });
    });
    // Pairs, in a fixed order (the candidates' creation order) so that `a` < `b` reads the same every time.
    const order = new Map(candidates.map((c, i) => [c.requirementId, i]));
    looked.sort((x, y) => (order.get(x.candidate.requirementId) ?? 0) - (order.get(y.candidate.requirementId) ?? 0));
    const toMerge: Array<[Looked, Looked]> = [];
    for (let i = 0; i < looked.length; i += 1) {
      for (let j = i + 1; j < looked.length; j += 1) {
        if (mayConflict(looked[i].answer, looked[j].answer)) {
          toMerge.push([looked[i], looked[j]]);
        }
      }
    }
    const found: ConflictPair[] = [];
    await inPool(toMerge, CONCURRENCY, async ([x, y]) => {
      // Both clean: the two works as they would land on the base, so only their own changes meet.
      // Otherwise the works as they are (the other's landed commit would carry the base's changes
      // into the pair), keeping only the files both changed (a base's change on one side is not the other's).
      const asLanded = x.answer.clean && y.answer.clean;
      const [left, right] = asLanded ? [x.answer.pairCommit, y.answer.pairCommit] : [x.work, y.work];
      const key = `${left}:${right}`;
      let paths = this.pairs.get(key);
      if (paths === undefined) {
        merged += 1;
        try {
          const merge = await mergeTrees(top, left, right);
          paths = merge.clean ? [] : merge.paths;
        } catch (err) {
          this.logger.debug(
            `radar: ${x.candidate.requirementId} × ${y.candidate.requirementId}: ${(err as Error).message}`,
          );
          paths = [];
        }
        this.pairs.set(key, paths);
      }
      if (!asLanded) {
        paths = paths.filter((p) => touches(x.answer, p) && touches(y.answer, p));
      }
      if (paths.length > 0) {
        found.push({ a: x.candidate.requirementId, b: y.candidate.requirementId, paths });
      }
    });
    found.sort(
      (p, q) => (order.get(p.a) ?? 0) - (order.get(q.a) ?? 0) || (order.get(p.b) ?? 0) - (order.get(q.b) ?? 0),
    );
    const published = performance.now();
    await this.publish(looked, unchecked, found);
    // What a pass cost, and how much of it was new work (the `landing` benchmark reads it).
    this.logger.debug({
      answered,
      candidates: candidates.length,
      carried,
      merged,
      ms: Math.round(performance.now() - started),
      // Reading the candidates and refs, computing (git), and writing the answers (database, events).
      readMs: Math.round(gitStarted - started),
      gitMs: Math.round(published - gitStarted),
      publishMs: Math.round(performance.now() - published),
      msg: 'conflict radar pass',
      pairs: toMerge.length,
    });
  }

  /**
   * The Requirement's work: its branch's head, or, when its last import found uncommitted work,
   * the snapshot commit that import made of it (on that same head) in the person's repository.
   */
  private workOf(candidate: RadarCandidate, head: string): string {
    return candidate.dirty && candidate.workSha !== null && candidate.headSha === head ? candidate.workSha : head;
  }

  /**
   * The answer on `base` of work that has not moved since its last answer, on an older base, when
   * the base only moved forward by commits that change none of the work's files (nor a file where
   * it has a folder) and that the work's history does not hold: then the merge has the same
   * outcome and the same files, the work is only further behind, and its pairs stay as they were
   * (what they are merged with still compares the work against a base it forked from). A land
   * moves the base for everyone: this is what keeps the pass after it from merging every
   * Requirement again. Null when it has to be computed.
   */
  private async carried(
    top: string,
    requirementId: string,
    head: string,
    base: string,
    work: string,
    moves: Map<string, Promise<BaseMove | null>>,
  ): Promise<WorkAnswer | null> {
    const before = this.previous.get(requirementId);
    if (!before || before.work !== work || before.base === base || before.answer.landed) {
      return null;
    }
    const key = `${before.base}:${base}`;
    let move = moves.get(key);
    if (!move) {
      move = this.baseMove(top, before.base, base).catch((err: unknown) => {
        this.logger.debug(`radar: the base's move ${key} is computed afresh: ${(err as Error).message}`);
        return null;
      });
      moves.set(key, move);
    }
    const moved = await move;
    if (moved === null || moved.containing.has(head) || mayConflict(before.answer, moved)) {
      return null;
    }
    return { ...before.answer, behindBy: before.answer.behindBy + moved.commits };
  }

  /** How the base moved from `from` to `to`, when that is a fast-forward of a reasonable size; else null. */
  private async baseMove(top: string, from: string, to: string): Promise<BaseMove | null> {
    const commits = await fastForwardCommits(top, from, to);
    if (commits === null || commits.length === 0 || commits.length > MOVE_MAX) {
      return null;
    }
    const [files, containing] = await Promise.all([changedPaths(top, from, to), branchesContaining(top, commits)]);
    return { commits: commits.length, containing, files: new Set(files), folders: foldersOf(files) };
  }

  private async answer(top: string, base: string, work: string): Promise<WorkAnswer> {
    const { ahead, behind: behindBy } = await aheadBehind(top, base, work);
    if (ahead === 0) {
      return {
        behindBy,
        clean: true,
        conflictPaths: [],
        files: new Set(),
        folders: new Set(),
        landed: true,
        pairCommit: work,
      };
    }
    if (behindBy === 0) {
      // The work is on the base's current commit: it would land as it is, nothing to merge.
      const files = await changedPaths(top, base, work);
      return {
        behindBy,
        clean: true,
        conflictPaths: [],
        files: new Set(files),
        folders: foldersOf(files),
        landed: false,
        pairCommit: work,
      };
    }
    const merged = await mergeTrees(top, base, work);
    let pairCommit = work;
    let files: string[];
    if (merged.clean) {
      // The work as it would land: pairs then compare changes against the same base commit.
      pairCommit = await commitTree(top, merged.tree, [base], 'agent-manager: radar');
      files = await changedPaths(top, base, pairCommit);
    } else {
      const mergeBase = (
        await git(['merge-base', base, work], { cwd: top, okCodes: [0, 1], timeoutMs: 30_000 })
      ).stdout.trim();
      files = mergeBase === '' ? [] : await changedPaths(top, mergeBase, work);
    }
    return {
      behindBy,
      clean: merged.clean,
      conflictPaths: merged.clean ? [] : merged.paths,
      files: new Set(files),
      folders: foldersOf(files),
      landed: false,
      pairCommit,
    };
  }

  /**
   * Writes what changed (each Requirement's row and its `requirement.updated`, then one
   * `landing.conflicts.updated`), and tells an agent whose work a base move made conflict.
   */
  private async publish(looked: Looked[], unchecked: RadarCandidate[], found: ConflictPair[]): Promise<void> {
    const now = this.clock.nowIso();
    const titles = new Map([...looked.map((l) => l.candidate), ...unchecked].map((c) => [c.requirementId, c.title]));
    const withOf = (id: string): RequirementConflict[] =>
      found
        .filter((p) => p.a === id || p.b === id)
        .map((p) => {
          const other = p.a === id ? p.b : p.a;
          return { paths: p.paths, requirementId: other, title: titles.get(other) ?? other };
        });
    const next = [
      ...looked.map((l) => ({
        behindBy: l.answer.behindBy,
        candidate: l.candidate,
        conflictPaths: l.answer.conflictPaths,
        conflictsWith: withOf(l.candidate.requirementId),
        baseSha: l.base,
        headSha: l.work,
        mergesCleanly: l.answer.clean,
      })),
      ...unchecked.map((c) => ({
        baseSha: null,
        behindBy: null,
        candidate: c,
        conflictPaths: [],
        conflictsWith: [],
        headSha: null,
        mergesCleanly: null,
      })),
    ];
    const changed = next.filter(({ candidate: { landing: was }, ...now }) => !was || !same(was, now));
    const newlyConflicting = changed.filter(
      (n) =>
        n.mergesCleanly === false &&
        n.candidate.landing?.mergesCleanly !== false &&
        n.candidate.landing?.headSha === n.headSha &&
        n.candidate.landing?.baseSha !== n.baseSha,
    );
    this.current = {
      checkedAt: now,
      pairs: found,
      requirements: next
        .filter((n) => n.mergesCleanly !== null)
        .map(({ candidate, ...rest }) => ({
          ...rest,
          checkedAt: now,
          requirementId: candidate.requirementId,
          title: candidate.title,
        })),
    };
    if (changed.length > 0) {
      await this.database.write(async (tx) => {
        for (const { candidate, ...set } of changed) {
          const rows = await this.requirements.loadForWrite(tx, candidate.requirementId).catch(() => null);
          if (rows === null) {
            continue; // purged meanwhile
          }
          rows.requirement.landing = await this.repository.save(
            tx,
            candidate.requirementId,
            { ...set, checkedAt: now },
            now,
          );
          await this.events.append(tx, {
            actor: SYSTEM_ACTOR,
            payload: { requirement: toRequirementResponse(rows.requirement, rows.session) },
            requirementId: candidate.requirementId,
            sessionId: rows.session.id,
            type: 'requirement.updated',
          });
        }
        await this.events.append(tx, {
          actor: SYSTEM_ACTOR,
          payload: { radar: this.current },
          requirementId: null,
          sessionId: null,
          type: 'landing.conflicts.updated',
        });
      });
    }
    for (const n of newlyConflicting) {
      await this.tellBaseConflict(n.candidate, n.baseSha as string, n.headSha as string, n.conflictPaths).catch(
        (err: unknown) =>
          this.logger.warn(`could not tell ${n.candidate.requirementId} about its conflict: ${(err as Error).message}`),
      );
    }
  }

  /**
   * One system message per (base, work): the base moved and the agent's work no longer merges.
   * A Requirement in the merge queue is told by the queue instead, when its turn comes.
   */
  private async tellBaseConflict(
    candidate: RadarCandidate,
    base: string,
    work: string,
    paths: string[],
  ): Promise<void> {
    if (candidate.status === 'done' || (await this.repository.isQueued(candidate.requirementId))) {
      return;
    }
    const shown = listed(paths);
    await this.triggers.deliver({
      args: { base: base.slice(0, 12), baseRef: candidate.baseRef ?? '', count: paths.length, paths: shown },
      author: 'system',
      body:
        `Agent Manager: ${candidate.baseRef ?? 'the base'} moved to ${base.slice(0, 12)} and your work no longer merges onto it cleanly. ` +
        `Conflicting files: ${shown}. Rebase your branch onto ${candidate.baseRef ?? base.slice(0, 12)} (or merge it in), resolve the conflicts and commit.`,
      code: 'landing.conflict',
      metadata: { base, paths, work },
      receiptKey: `${base}:${work}`,
      requirementId: candidate.requirementId,
      source: 'landing',
      triggerId: BASE_CONFLICT_TRIGGER,
    });
  }
}

function same(
  was: RequirementLandingEntity,
  now: Pick<
    RequirementLandingEntity,
    'mergesCleanly' | 'conflictPaths' | 'conflictsWith' | 'behindBy' | 'baseSha' | 'headSha'
  >,
): boolean {
  const wasClean = was.mergesCleanly === null ? null : Boolean(was.mergesCleanly);
  return (
    wasClean === now.mergesCleanly &&
    was.behindBy === now.behindBy &&
    was.baseSha === now.baseSha &&
    was.headSha === now.headSha &&
    sameList(was.conflictPaths, now.conflictPaths) &&
    sameConflicts(was.conflictsWith, now.conflictsWith)
  );
}
