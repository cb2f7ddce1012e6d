import { ExecutionContext, createParamDecorator } from '@nestjs/common';

import { forbidden } from '../core/errors/domain-error';
import type { AuthenticatedRequest } from './authentication.middleware';
import type { AgentScope } from './run-credentials.service';

/**
 * Who calls the agent API: an agent run, bound to its credential's Requirement and session, or
 * the owner (the local token: an integration script registering the PR it opened), who may act
 * for whichever Requirement the request names and is audited as a person.
 */
export type AgentCaller = { kind: 'run'; scope: AgentScope } | { kind: 'owner' };

/** The calling run's scope, for the endpoints only a run can call (its own context). */
export const CurrentAgentScope = createParamDecorator((_data: unknown, context: ExecutionContext): AgentScope => {
  const scope = context.switchToHttp().getRequest<AuthenticatedRequest>().agentScope;
  if (!scope) {
    throw forbidden('agent_credential_required', 'this endpoint is called by agent runs with their run credential');
  }
  return scope;
});

/** The run or the owner; the authentication middleware lets nobody else reach `/api/agent/*`. */
export const CurrentAgentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): AgentCaller => {
  const scope = context.switchToHttp().getRequest<AuthenticatedRequest>().agentScope;
  return scope ? { kind: 'run', scope } : { kind: 'owner' };
});

/** Refuses (403) a run that names a Requirement or session other than its own; the owner may name any. */
export function assertInScope(
  caller: AgentCaller,
  claimed: { requirementId?: string | null; sessionId?: string | null },
): void {
  if (caller.kind === 'owner') {
    return;
  }
  const { scope } = caller;
  if (claimed.requirementId != null && claimed.requirementId !== scope.requirementId) {
    throw forbidden(
      'outside_run_scope',
      `this run acts for Requirement ${scope.requirementId}, not ${claimed.requirementId}`,
    );
  }
  if (claimed.sessionId != null && claimed.sessionId !== scope.sessionId) {
    throw forbidden('outside_run_scope', `this run acts for session ${scope.sessionId}, not ${claimed.sessionId}`);
  }
}
