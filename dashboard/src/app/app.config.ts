import { APP_BASE_HREF } from '@angular/common';
import { ApplicationConfig, provideBrowserGlobalErrorListeners, provideZonelessChangeDetection } from '@angular/core';
import { provideRouter, withComponentInputBinding } from '@angular/router';

import { routes } from './app.routes';

export const appConfig: ApplicationConfig = {
  // index.html has no <base> element: the server's CSP sets base-uri 'none'. Asset URLs are
  // absolute (deployUrl) and the router gets its base here.
  providers: [{ provide: APP_BASE_HREF, useValue: '/' }, provideBrowserGlobalErrorListeners(), provideZonelessChangeDetection(), provideRouter(routes, withComponentInputBinding())],
};
