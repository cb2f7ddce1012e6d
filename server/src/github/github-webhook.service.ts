import type { Readable } from 'node:stream';

import { Injectable, Logger } from '@nestjs/common';
import { type Observable, Subject } from 'rxjs';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid, notFound, tooManyRequests, unauthorized } from '../core/errors/domain-error';
import { PullRequestsService } from '../pull-requests/pull-requests.service';
import { PullRequestReconciler } from '../forges/pull-request-reconciler.service';
import { readWebhookBody, webhookJson } from './webhook-body';
import { webhookSignatureVerifier } from './webhook-signature';

/**
 * What unauthenticated callers can make the process hold through the webhook: at most
 * `concurrent` deliveries in receipt at once, each verified as it streams, within `bodyBytes`
 * (GitHub's cap) and `receiveTimeoutMs`. Only `payloadBytes` of a body are ever held, and only
 * for the events acted on, so the worst case is `concurrent` × 1 MB whatever is sent. The PR
 * events acted on are far smaller than that; a larger one that verifies has the reconciler look
 * at every tracked PR instead of the ones it names. A refused delivery costs nothing either: the
 * reconciler's poll finds what it carried.
 */
export const WEBHOOK_LIMITS = {
  bodyBytes: 25 * 1024 * 1024,
  concurrent: 8,
  payloadBytes: 1024 * 1024,
  receiveTimeoutMs: 30_000,
} as const;

/** Events that name PRs (see `affected`); every other event is verified and acknowledged, never parsed. */
const HANDLED_EVENTS = new Set([
  'check_run',
  'check_suite',
  'issue_comment',
  'issues',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'pull_request_review_thread',
  'status',
]);

export interface WebhookDelivery {
  event: string | undefined;
  signature: string | string[] | undefined;
  body: Readable;
  declaredLength: number | null;
}

export interface WebhookOutcome {
  accepted: boolean;
  event: string;
  /** Tracked PRs the event concerns, looked at again now. */
  pullRequests: number;
}

/** The parts of a webhook payload that name PRs; every value is checked before it is used. */
interface WebhookPayload {
  repository?: { full_name?: unknown };
  pull_request?: { number?: unknown };
  issue?: { number?: unknown; pull_request?: unknown };
  check_run?: CheckPayload;
  check_suite?: CheckPayload;
  sha?: unknown;
}

interface CheckPayload {
  pull_requests?: unknown;
  head_sha?: unknown;
}

/**
 * The optional GitHub webhook (off until `githubWebhookSecret` is set). An event only tells
 * which tracked PRs changed; the reconciler then reads them from GitHub like a poll does and
 * delivers through the same triggers and receipts. So a webhook brings changes in seconds, and
 * an event seen by both the webhook and a poll is delivered once. Nothing in the payload is
 * trusted beyond naming the PR.
 */
@Injectable()
export class GitHubWebhookService {
  private readonly logger = new Logger(GitHubWebhookService.name);
  /** Deliveries whose bodies are being received now. */
  private receiving = 0;
  private readonly issueActivity = new Subject<string>();
  /** A repository's issues changed (an `issues` event, a comment on an issue): intake looks again at once. */
  readonly issueActivity$: Observable<string> = this.issueActivity.asObservable();

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly pullRequests: PullRequestsService,
    private readonly reconciler: PullRequestReconciler,
  ) {}

  /** 404 while the webhook is off (no secret configured). */
  assertEnabled(): string {
    const secret = this.configuration.get('githubWebhookSecret');
    if (secret === null) {
      throw notFound(
        'webhook_disabled',
        'the GitHub webhook is off: set githubWebhookSecret in the configuration to turn it on',
      );
    }
    return secret;
  }

  async receive({ body, declaredLength, event, signature }: WebhookDelivery): Promise<WebhookOutcome> {
    const secret = this.assertEnabled();
    if (declaredLength !== null && declaredLength > WEBHOOK_LIMITS.bodyBytes) {
      throw invalid('body_too_large', `webhook bodies may be at most ${WEBHOOK_LIMITS.bodyBytes} bytes`);
    }
    // Refusals that need no body come before reading any of it.
    const verifier = webhookSignatureVerifier(secret, signature);
    if (!verifier) {
      this.logger.warn({ event, msg: 'webhook refused: no valid signature header' });
      throw unauthorized(
        'invalid_signature',
        'X-Hub-Signature-256 does not match the body signed with the configured secret',
      );
    }
    if (typeof event !== 'string') {
      throw invalid('invalid_webhook', 'a webhook needs an X-GitHub-Event header and a JSON object body');
    }
    if (this.receiving >= WEBHOOK_LIMITS.concurrent) {
      this.logger.warn({ event, msg: 'webhook refused: busy' });
      throw tooManyRequests(
        'webhook_busy',
        `at most ${WEBHOOK_LIMITS.concurrent} webhook deliveries are received at once; retry shortly`,
      );
    }
    const handled = HANDLED_EVENTS.has(event);
    this.receiving++;
    let payload: Buffer | null;
    try {
      payload = await readWebhookBody(body, verifier, {
        keepBytes: handled ? WEBHOOK_LIMITS.payloadBytes : 0,
        maxBytes: WEBHOOK_LIMITS.bodyBytes,
        timeoutMs: WEBHOOK_LIMITS.receiveTimeoutMs,
      });
    } finally {
      this.receiving--;
    }
    if (!verifier.matches()) {
      this.logger.warn({ event, msg: 'webhook refused: bad signature' });
      throw unauthorized(
        'invalid_signature',
        'X-Hub-Signature-256 does not match the body signed with the configured secret',
      );
    }
    if (!handled) {
      this.logger.log({ event, msg: 'webhook received', pullRequests: 0 });
      return { accepted: true, event, pullRequests: 0 };
    }
    if (payload === null) {
      this.logger.log({ event, msg: 'webhook received: payload too large to read, reconciling every tracked PR' });
      void this.reconciler.reconcile();
      return { accepted: true, event, pullRequests: 0 };
    }
    return this.deliver(event, payload);
  }

  private async deliver(event: string, body: Buffer): Promise<WebhookOutcome> {
    const ids = await this.affected(event, webhookJson(body, 'X-GitHub-Event'));
    if (ids.length > 0) {
      void this.reconciler.reconcile(ids);
    }
    this.logger.log({ event, msg: 'webhook received', pullRequests: ids.length });
    return { accepted: true, event, pullRequests: ids.length };
  }

  /** The tracked PRs an event is about. */
  private async affected(event: string, payload: WebhookPayload): Promise<string[]> {
    const repository = payload.repository?.full_name;
    if (typeof repository !== 'string') {
      return [];
    }
    const numbers = new Set<number>();
    const heads = new Set<string>();
    const addNumber = (value: unknown) =>
      Number.isSafeInteger(value) && (value as number) > 0 && numbers.add(value as number);
    const addHead = (value: unknown) =>
      typeof value === 'string' && /^[0-9a-f]{7,64}$/i.test(value) && heads.add(value);
    switch (event) {
      case 'pull_request':
      case 'pull_request_review':
      case 'pull_request_review_comment':
      case 'pull_request_review_thread':
        addNumber(payload.pull_request?.number);
        break;
      case 'issue_comment':
        if (payload.issue?.pull_request) {
          addNumber(payload.issue.number);
        } else {
          this.issueActivity.next(repository);
        }
        break;
      case 'issues':
        this.issueActivity.next(repository);
        return [];
      case 'check_run':
      case 'check_suite': {
        const subject = payload[event];
        const prs: unknown[] = Array.isArray(subject?.pull_requests) ? subject.pull_requests : [];
        for (const pr of prs) {
          addNumber(typeof pr === 'object' && pr !== null ? (pr as { number?: unknown }).number : undefined);
        }
        addHead(subject?.head_sha);
        break;
      }
      case 'status':
        addHead(payload.sha);
        break;
      default:
        return [];
    }
    const found = await this.pullRequests.findByIdentity(
      'github',
      [...numbers].slice(0, 100).map((number) => ({ number, repository })),
    );
    for (const sha of [...heads].slice(0, 10)) {
      found.push(...(await this.pullRequests.findByHead('github', repository, sha)));
    }
    return [...new Set(found.map((pr) => pr.id))];
  }
}
