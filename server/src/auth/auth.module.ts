import { Global, Module } from '@nestjs/common';

import { DevicesModule } from '../devices/devices.module';
import { AuthenticationMiddleware } from './authentication.middleware';
import { HttpSecurityMiddleware } from './http-security.middleware';
import { LocalTokenService } from './local-token.service';
import { RunCredentialsService } from './run-credentials.service';

/** Global: RunLauncher issues and revokes run credentials from the runs module. */
@Global()
@Module({
  imports: [DevicesModule],
  exports: [AuthenticationMiddleware, HttpSecurityMiddleware, LocalTokenService, RunCredentialsService],
  providers: [AuthenticationMiddleware, HttpSecurityMiddleware, LocalTokenService, RunCredentialsService],
})
export class AuthModule {}
