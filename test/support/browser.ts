import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { ROOT } from './manager-process';

// Debian's Chromium driven by playwright-core (no downloaded browser). The flags keep it from
// phoning home or needing a GPU or a sandbox the CI container does not have.
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'dashboard');

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors seen so far (a healthy dashboard has none). */
  errors: string[];
  close(): Promise<void>;
}

export interface LaunchOptions {
  viewport?: { width: number; height: number };
  locale?: string;
  colorScheme?: 'light' | 'dark';
}

/** A fresh browser profile (its own --user-data-dir), one page. */
export async function launchBrowser({ viewport = { width: 1280, height: 800 }, locale = 'en-US', colorScheme = 'light' }: LaunchOptions = {}): Promise<BrowserSession> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'am-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    args: FLAGS,
    colorScheme,
    executablePath: CHROMIUM,
    headless: true,
    locale,
    viewport,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') {
      errors.push(`${message.text()} @ ${message.location().url}`);
    }
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  return {
    close: async () => {
      await context.close();
      fs.rmSync(profile, { force: true, recursive: true });
    },
    context,
    errors,
    page,
  };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ fullPage: false, path: path.join(ARTIFACTS, `${name}.png`) });
}
