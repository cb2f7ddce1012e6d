import { APP_BASE_HREF } from '@angular/common';
import { ApplicationConfig, provideBrowserGlobalErrorListeners, provideZonelessChangeDetection } from '@angular/core';
import {
  PreloadAllModules,
  TitleStrategy,
  provideRouter,
  withComponentInputBinding,
  withPreloading,
} from '@angular/router';

import { routes } from './app.routes';
import { PageTitle } from './core/page-title';

export const appConfig: ApplicationConfig = {
  // index.html has no <base> element: the server's CSP sets base-uri 'none'. Asset URLs are
  // absolute (deployUrl) and the router gets its base here. Lazy routes stay out of the initial
  // bundle but are fetched once the first page is up, so opening a Requirement never waits on them.
  providers: [
    { provide: APP_BASE_HREF, useValue: '/' },
    provideBrowserGlobalErrorListeners(),
    provideZonelessChangeDetection(),
    provideRouter(routes, withComponentInputBinding(), withPreloading(PreloadAllModules)),
    { provide: TitleStrategy, useExisting: PageTitle },
  ],
};
