import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';

import { ROOT } from './manager-process';
import { until } from './wait';

// Debian's Chromium driven by playwright-core (no downloaded browser). The flags keep it from
// phoning home or needing a GPU or a sandbox the CI container does not have.
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

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
export async function launchBrowser({
  viewport = { width: 1280, height: 800 },
  locale = 'en-US',
  colorScheme = 'light',
}: LaunchOptions = {}): Promise<BrowserSession> {
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

/** A real PNG, 24×24 unless told (the server checks signatures; the browser must be able to decode it). */
export function png(width = 24, height = width): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) {
      c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    }
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) {
      c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    }
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(8 + data.length + 4);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const rows = Buffer.concat(
    Array.from({ length: height }, () => Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x3b)])),
  );
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

type Box = NonNullable<Awaited<ReturnType<Locator['boundingBox']>>>;

/**
 * The element's box once it is on screen and its layout has settled (the same box twice, 50 ms
 * apart). A live update may re-render a card between a `waitFor` and a `boundingBox` (which is
 * null while it is not visible); a layout assertion must wait for the condition, not race it.
 */
export async function settledBox(locator: Locator, timeoutMs = 15_000): Promise<Box> {
  let last: Box | null = null;
  return until(
    'a settled box on screen',
    async () => {
      const box = await locator.boundingBox();
      const same =
        box && last && box.x === last.x && box.y === last.y && box.width === last.width && box.height === last.height;
      last = box;
      return same ? box : undefined;
    },
    timeoutMs,
    50,
  );
}
