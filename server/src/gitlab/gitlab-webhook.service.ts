import { createHash, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';

import { Injectable, Logger } from '@nestjs/common';
import { type Observable, Subject } from 'rxjs';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid, notFound, tooManyRequests, unauthorized } from '../core/errors/domain-error';
import { PullRequestReconciler } from '../forges/pull-request-reconciler.service';
import { WEBHOOK_LIMITS } from '../github/github-webhook.service';
import { readWebhookBody, webhookJson } from '../github/webhook-body';
import { PullRequestsService } from '../pull-requests/pull-requests.service';

/** Events that name merge requests or issues (see `affected`); every other event is acknowledged, never parsed. */
const HANDLED_EVENTS = new Set([
  'Confidential Issue Hook',
  'Confidential Note Hook',
  'Issue Hook',
  'Merge Request Hook',
  'Note Hook',
  'Pipeline Hook',
]);

export interface GitLabWebhookDelivery {
  event: string | undefined;
  token: string | undefined;
  body: Readable;
  declaredLength: number | null;
}

export interface GitLabWebhookOutcome {
  accepted: boolean;
  event: string;
  /** Tracked merge requests the event concerns, looked at again now. */
  pullRequests: number;
}

/** The parts of a payload that name merge requests; every value is checked before it is used. */
interface GitLabPayload {
  project?: { path_with_namespace?: unknown };
  object_attributes?: { iid?: unknown; noteable_type?: unknown; sha?: unknown };
  merge_request?: { iid?: unknown } | null;
}

/**
 * The optional GitLab webhook (off until `gitlabWebhookSecret` is set). GitLab does not sign its
 * deliveries: it sends the secret back as `X-Gitlab-Token`, compared here in constant time before
 * a byte of the body is read. An event only tells which tracked merge requests changed; the
 * reconciler then reads them from GitLab like a poll does, through the same triggers and receipts,
 * so an event seen by both is delivered once and nothing in a payload is trusted beyond naming one.
 */
@Injectable()
export class GitLabWebhookService {
  private readonly logger = new Logger(GitLabWebhookService.name);
  private receiving = 0;
  private readonly issueActivity = new Subject<string>();
  /** A project's issues changed (an issue event, a note on an issue): intake looks again at once. */
  readonly issueActivity$: Observable<string> = this.issueActivity.asObservable();

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly pullRequests: PullRequestsService,
    private readonly reconciler: PullRequestReconciler,
  ) {}

  async receive({ body, declaredLength, event, token }: GitLabWebhookDelivery): Promise<GitLabWebhookOutcome> {
    const secret = this.configuration.get('gitlabWebhookSecret');
    if (secret === null) {
      throw notFound(
        'webhook_disabled',
        'the GitLab webhook is off: set gitlabWebhookSecret in the configuration to turn it on',
      );
    }
    if (typeof token !== 'string' || !sameSecret(token, secret)) {
      this.logger.warn({ event, msg: 'GitLab webhook refused: wrong or missing X-Gitlab-Token' });
      throw unauthorized('invalid_token', 'X-Gitlab-Token does not match the configured gitlabWebhookSecret');
    }
    if (typeof event !== 'string') {
      throw invalid('invalid_webhook', 'a webhook needs an X-Gitlab-Event header and a JSON object body');
    }
    if (declaredLength !== null && declaredLength > WEBHOOK_LIMITS.bodyBytes) {
      throw invalid('body_too_large', `webhook bodies may be at most ${WEBHOOK_LIMITS.bodyBytes} bytes`);
    }
    if (this.receiving >= WEBHOOK_LIMITS.concurrent) {
      throw tooManyRequests(
        'webhook_busy',
        `at most ${WEBHOOK_LIMITS.concurrent} webhook deliveries are received at once; retry shortly`,
      );
    }
    const handled = HANDLED_EVENTS.has(event);
    this.receiving++;
    let payload: Buffer | null;
    try {
      // The token already proved the sender; the body is only bounded, not verified.
      payload = await readWebhookBody(body, ACCEPT_ALL, {
        keepBytes: handled ? WEBHOOK_LIMITS.payloadBytes : 0,
        maxBytes: WEBHOOK_LIMITS.bodyBytes,
        timeoutMs: WEBHOOK_LIMITS.receiveTimeoutMs,
      });
    } finally {
      this.receiving--;
    }
    if (!handled) {
      return { accepted: true, event, pullRequests: 0 };
    }
    if (payload === null) {
      this.logger.log({ event, msg: 'GitLab webhook: payload too large to read, reconciling every tracked request' });
      void this.reconciler.reconcile();
      return { accepted: true, event, pullRequests: 0 };
    }
    const ids = await this.affected(event, webhookJson(payload, 'X-Gitlab-Event'));
    if (ids.length > 0) {
      void this.reconciler.reconcile(ids);
    }
    this.logger.log({ event, msg: 'GitLab webhook received', pullRequests: ids.length });
    return { accepted: true, event, pullRequests: ids.length };
  }

  /** The tracked merge requests an event is about. */
  private async affected(event: string, payload: GitLabPayload): Promise<string[]> {
    const project = payload.project?.path_with_namespace;
    if (typeof project !== 'string' || project.length > 255) {
      return [];
    }
    const attributes = payload.object_attributes ?? {};
    let iid: unknown = null;
    let head: unknown = null;
    switch (event) {
      case 'Merge Request Hook':
        iid = attributes.iid;
        break;
      case 'Note Hook':
      case 'Confidential Note Hook':
        if (attributes.noteable_type === 'Issue') {
          this.issueActivity.next(project);
        }
        iid = attributes.noteable_type === 'MergeRequest' ? payload.merge_request?.iid : null;
        break;
      case 'Issue Hook':
      case 'Confidential Issue Hook':
        this.issueActivity.next(project);
        return [];
      case 'Pipeline Hook':
        // A merge request pipeline names its MR; a branch pipeline only its commit.
        iid = payload.merge_request?.iid ?? null;
        head = attributes.sha;
        break;
    }
    const found =
      Number.isSafeInteger(iid) && (iid as number) > 0
        ? await this.pullRequests.findByIdentity('gitlab', [{ number: iid as number, repository: project }])
        : [];
    if (typeof head === 'string' && /^[0-9a-f]{7,64}$/i.test(head)) {
      found.push(...(await this.pullRequests.findByHead('gitlab', project, head)));
    }
    return [...new Set(found.map((pr) => pr.id))];
  }
}

const ACCEPT_ALL = { matches: () => true, update: () => undefined };

/** Constant-time comparison of the token GitLab sent with the secret (of any lengths). */
function sameSecret(given: string, secret: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(secret));
}
