import { createHash, randomBytes } from 'node:crypto';

import { Injectable, Logger } from '@nestjs/common';

/** What a run-scoped credential may act for. */
export interface AgentScope {
  runId: string;
  requirementId: string;
  sessionId: string;
}

const PREFIX = 'amr_';

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * Run-scoped agent credentials. Each agent run gets its own random token, bound to its
 * Requirement and session and valid only while the run is active. They live in memory only:
 * a restart fails every run that was active, so no credential should outlive the process.
 * Tokens are kept as SHA-256 digests, so a heap dump does not hand them out.
 */
@Injectable()
export class RunCredentialsService {
  private readonly logger = new Logger(RunCredentialsService.name);
  private readonly byDigest = new Map<string, AgentScope>();
  private readonly digestByRun = new Map<string, string>();

  /** Issues the credential for a starting run (replacing any earlier one for that run). */
  issue(scope: AgentScope): string {
    this.revoke(scope.runId);
    const token = `${PREFIX}${randomBytes(32).toString('hex')}`;
    const key = digest(token);
    this.byDigest.set(key, { ...scope });
    this.digestByRun.set(scope.runId, key);
    this.logger.log({ msg: 'run credential issued', requirementId: scope.requirementId, runId: scope.runId });
    return token;
  }

  /** Ends a run's credential; later calls with it are refused. */
  revoke(runId: string): void {
    const key = this.digestByRun.get(runId);
    if (key) {
      this.byDigest.delete(key);
      this.digestByRun.delete(runId);
      this.logger.log({ msg: 'run credential revoked', runId });
    }
  }

  /** The scope of a presented run token, or null when it is unknown or revoked. */
  resolve(token: string): AgentScope | null {
    if (!token.startsWith(PREFIX)) {
      return null;
    }
    const scope = this.byDigest.get(digest(token));
    return scope ? { ...scope } : null;
  }

  isRunToken(token: string): boolean {
    return token.startsWith(PREFIX);
  }

  get activeCount(): number {
    return this.byDigest.size;
  }
}
