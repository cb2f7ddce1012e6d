import { ExecutionContext, createParamDecorator } from '@nestjs/common';

import { forbidden } from '../core/errors/domain-error';
import type { AuthenticatedRequest } from './authentication.middleware';
import type { AgentScope } from './run-credentials.service';

/** The calling run's scope; the authentication middleware guarantees it on `/api/agent/*`. */
export const CurrentAgentScope = createParamDecorator((_data: unknown, context: ExecutionContext): AgentScope => {
  const scope = context.switchToHttp().getRequest<AuthenticatedRequest>().agentScope;
  if (!scope) {
    throw forbidden('agent_credential_required', 'this endpoint is called by agent runs with their run credential');
  }
  return scope;
});

/** Refuses (403) an agent request that names a Requirement or session other than its own. */
export function assertInScope(scope: AgentScope, claimed: { requirementId?: string | null; sessionId?: string | null }): void {
  if (claimed.requirementId != null && claimed.requirementId !== scope.requirementId) {
    throw forbidden('outside_run_scope', `this run acts for Requirement ${scope.requirementId}, not ${claimed.requirementId}`);
  }
  if (claimed.sessionId != null && claimed.sessionId !== scope.sessionId) {
    throw forbidden('outside_run_scope', `this run acts for session ${scope.sessionId}, not ${claimed.sessionId}`);
  }
}
