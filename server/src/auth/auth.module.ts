import { Global, Module } from '@nestjs/common';

import { AuthenticationMiddleware } from './authentication.middleware';
import { HttpSecurityMiddleware } from './http-security.middleware';
import { LocalTokenService } from './local-token.service';
import { RunCredentialsService } from './run-credentials.service';

/** Global: the runs orchestrator issues and revokes run credentials from its own module. */
@Global()
@Module({
  exports: [AuthenticationMiddleware, HttpSecurityMiddleware, LocalTokenService, RunCredentialsService],
  providers: [AuthenticationMiddleware, HttpSecurityMiddleware, LocalTokenService, RunCredentialsService],
})
export class AuthModule {}
