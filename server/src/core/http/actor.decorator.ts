import { ExecutionContext, createParamDecorator } from '@nestjs/common';
import type { Request } from 'express';

import type { EventActor } from '@libs/contracts';

/** Set on the request by authentication; absent means a person using the local API. */
export interface ActorRequest extends Request {
  actor?: EventActor;
  /** Set when a paired device (not the owner's own credentials) calls: it acts for the person, with less. */
  device?: { id: string };
}

/** Who is calling: recorded on every event the call writes (audit trail). */
export const Actor = createParamDecorator((_data: unknown, context: ExecutionContext): EventActor => {
  const req = context.switchToHttp().getRequest<ActorRequest>();
  return req.actor ?? { id: null, kind: 'human' };
});
