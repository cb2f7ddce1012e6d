// A failed pipeline job's log, as the agent gets it (issue 49 §5): the tail only, streamed so that
// a log of any length costs a bounded read, cleaned of GitLab's section markers, terminal escapes
// and invisible characters, and remembered once its job finished.
import { ForgeError } from '../forges/forge.errors';
import { LOG_TAIL_LINES } from '../forges/forge-triggers';
import { rootCause } from '../github/github.errors';
import { type GitLabHttp, encodeProject } from './gitlab-http';

/** The tail handed to the agent is at most this many characters, whatever the lines are. */
const LOG_TAIL_CHARS = 4_000;
/** Of a job's log only this much of its end is held while it streams in. */
const LOG_KEEP_BYTES = 64 * 1024;
/** A job's log is read no further than this (a job can print without end). */
const LOG_READ_BYTES = 20 * 1024 * 1024;
/** Said after a log whose reading stopped before its end (its size or its slowness). */
const LOG_CUT = '[… the log was cut here, before its end: read the rest on GitLab]';
/** Job log tails remembered (a finished job's log does not change). */
const LOG_CACHE_SIZE = 200;
/** Terminal escapes (colours, cursor moves) in a job's log; built from its code so no control character sits in a literal. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');
/** C0 controls but tab and newline, DEL, C1 controls, bidirectional overrides and isolates (by code, as above). */
const INVISIBLE = new RegExp(
  `[${[
    [0x00, 0x08],
    [0x0b, 0x1f],
    [0x7f, 0x9f],
    [0x202a, 0x202e],
    [0x2066, 0x2069],
  ]
    .map(([from, to]) => `\\u${from.toString(16).padStart(4, '0')}-\\u${to.toString(16).padStart(4, '0')}`)
    .join('')}]`,
  'g',
);

/** The job-log tails one client reads, with the finished jobs' remembered (by `project#job`). */
export class GitLabJobLogs {
  private readonly tails = new Map<string, string>();

  constructor(private readonly http: GitLabHttp) {}

  /**
   * The tail of a job's log, streamed: only the last LOG_KEEP_BYTES are held however long the log
   * is, reading stops after LOG_READ_BYTES (a log that long is told as cut), and a finished job's
   * tail is remembered (its log does not change), so a busy MR does not read it again each look.
   */
  async tail(project: string, jobId: number): Promise<string> {
    const cacheKey = `${project.toLowerCase()}#${jobId}`;
    const cached = this.tails.get(cacheKey);
    if (cached !== undefined) {
      return cached;
    }
    if (this.http.spent()) {
      throw new ForgeError('rate_limited', 'GitLab rate limit spent: the job log is read after it resets');
    }
    const url = `${this.http.baseUrl}/projects/${encodeProject(project)}/jobs/${jobId}/trace`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.http.settings.timeoutMs);
    let kept = Buffer.alloc(0);
    let read = 0;
    try {
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${this.http.token ?? ''}` },
        signal: controller.signal,
      });
      this.http.observeBudget(response.headers);
      if (!response.ok || response.body === null) {
        throw new ForgeError('failed', `GitLab answered ${response.status} for the job's log`, {
          status: response.status,
        });
      }
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }
        read += value.byteLength;
        kept = Buffer.concat([kept, value]);
        if (kept.length > LOG_KEEP_BYTES) {
          kept = kept.subarray(kept.length - LOG_KEEP_BYTES);
        }
        if (read >= LOG_READ_BYTES) {
          await reader.cancel();
          break;
        }
      }
    } catch (err) {
      if (controller.signal.aborted && kept.length > 0) {
        // Too slow to send whole: what came is told (and remembered, so the next look does not wait again).
        return this.remember(cacheKey, `${tailOf(kept.toString('utf8'))}\n${LOG_CUT}`);
      }
      throw err instanceof ForgeError
        ? err
        : controller.signal.aborted
          ? new ForgeError('timeout', `GitLab did not send the job's log within ${this.http.settings.timeoutMs} ms`)
          : new ForgeError('network', `GitLab unreachable: ${rootCause(err)}`);
    } finally {
      clearTimeout(timer);
    }
    return this.remember(cacheKey, tailOf(kept.toString('utf8')) + (read >= LOG_READ_BYTES ? `\n${LOG_CUT}` : ''));
  }

  private remember(cacheKey: string, tail: string): string {
    this.tails.set(cacheKey, tail);
    if (this.tails.size > LOG_CACHE_SIZE) {
      this.tails.delete(this.tails.keys().next().value!);
    }
    return tail;
  }
}

/**
 * The end of a job's log as the agent gets it: GitLab's section markers and terminal escapes
 * removed (they are noise to a model), the last LOG_TAIL_LINES lines, at most LOG_TAIL_CHARS.
 */
export function tailOf(log: string): string {
  const clean = log
    .replace(ANSI_ESCAPE, '')
    .replace(/section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]]*\])?\r?/g, '')
    .replace(/\r(?!\n)/g, '\n');
  // Other control characters go too (tab and newline stay), C1 controls and bidirectional
  // overrides with them: a log must not steer a terminal nor hide text from the person reading it.
  const printable = clean.replace(INVISIBLE, '');
  const lines = printable.replace(/\n+$/, '').split('\n').slice(-LOG_TAIL_LINES).join('\n');
  return lines.length > LOG_TAIL_CHARS ? `…${lines.slice(-LOG_TAIL_CHARS)}` : lines;
}
