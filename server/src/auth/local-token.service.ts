import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { loadOrCreateToken, secretsEqual, sessionCookieValue } from './local-token';

/** The human credential: the local token (Bearer) or the login cookie derived from it. */
@Injectable()
export class LocalTokenService implements OnModuleInit {
  private readonly logger = new Logger(LocalTokenService.name);
  private token = '';
  private cookieValue = '';

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  onModuleInit(): void {
    this.token = loadOrCreateToken(this.runtime.paths.tokenPath);
    this.cookieValue = sessionCookieValue(this.token);
    if (!this.enabled) {
      this.logger.warn({
        msg: 'authentication is disabled (authentication: none): anyone who can reach the port controls the agents',
      });
    }
  }

  /** False only when the configuration says `authentication: none`. */
  get enabled(): boolean {
    return this.configuration.get('authentication') !== 'none';
  }

  get value(): string {
    return this.token;
  }

  get sessionCookie(): string {
    return this.cookieValue;
  }

  matchesToken(presented: string): boolean {
    return secretsEqual(presented, this.token);
  }

  matchesCookie(presented: string): boolean {
    return secretsEqual(presented, this.cookieValue);
  }
}
