// What a bounded run of a program is given and gives back: shared by runBounded (bounded-process.ts)
// and the spawner that runs it out of process (spawner.ts), which must not import each other.

export interface BoundedOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** The process group is killed (SIGKILL) after this long. */
  timeoutMs: number;
  /** Stdout kept; past it the process is killed and the result says `truncated`. */
  maxBytes: number;
  /** Stderr kept (its tail). */
  maxErrorBytes?: number;
  /** Both streams into one bounded buffer (a setup command's output as it printed it). */
  mergeOutput?: boolean;
  /** Let the process go on once its output is cut (a chatty setup command); default: kill it. */
  keepRunningWhenCut?: boolean;
}

export interface BoundedResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  truncated: boolean;
  timedOut: boolean;
  /** Set when the program could not be started at all (ENOENT…). */
  error: string | null;
}
