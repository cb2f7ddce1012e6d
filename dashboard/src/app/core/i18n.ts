import { Injectable, computed, signal } from '@angular/core';

import { type MessageKey, en, zh } from './i18n-messages';

// Two dictionaries switched at run time (a signal), rather than Angular's build-time i18n, which
// would need one build per language and a reload to switch.

/** The `{name}` placeholders of a text, as a union of names. */
type Placeholders<Text extends string> = Text extends `${string}{${infer Name}}${infer Rest}`
  ? Name | Placeholders<Rest>
  : never;

/** Keys whose English text has no placeholder. */
type PlainKey = { [K in MessageKey]: [Placeholders<(typeof en)[K]>] extends [never] ? K : never }[MessageKey];

/**
 * The translate function components expose to their templates: a known key, with a value for
 * each of its English text's placeholders (and only with them).
 */
export interface Translate {
  (key: PlainKey): string;
  <K extends Exclude<MessageKey, PlainKey>>(
    key: K,
    params: Readonly<Record<Placeholders<(typeof en)[K]>, string | number>>,
  ): string;
}

/**
 * A key made of a prefix and a value, typed as the union it can be (`keyOf('run', run.status)` is
 * `'run.running' | 'run.failed' | …`), so a value without a text fails the build.
 */
export const keyOf = <P extends string, V extends string>(prefix: P, value: V): `${P}.${V}` => `${prefix}.${value}`;

export type Language = 'en' | 'zh-CN';
const DICTIONARIES: Record<Language, Record<MessageKey, string>> = { en, 'zh-CN': zh };
const KEY = 'am.language';

function initialLanguage(): Language {
  const saved = localStorage.getItem(KEY);
  if (saved === 'en' || saved === 'zh-CN') {
    return saved;
  }
  return navigator.languages.some((l) => l.toLowerCase().startsWith('zh')) ? 'zh-CN' : 'en';
}

/**
 * The locale English dates and numbers follow: the browser's own English (en-US writes 12/2/26,
 * en-GB 02/12/2026), else the browser's language; a fixed en-GB made every American read
 * day and month the wrong way round.
 */
function englishLocale(): string {
  const preferred = navigator.languages.find((l) => l.toLowerCase().startsWith('en')) ?? navigator.language;
  try {
    return Intl.DateTimeFormat.supportedLocalesOf([preferred]).length ? preferred : 'en';
  } catch {
    // A malformed language tag (a RangeError): plain English.
    return 'en';
  }
}

@Injectable({ providedIn: 'root' })
export class I18n {
  readonly language = signal<Language>(initialLanguage());
  private readonly dictionary = computed(() => DICTIONARIES[this.language()]);
  private readonly english = englishLocale();
  readonly locale = computed(() => (this.language() === 'zh-CN' ? 'zh-CN' : this.english));

  constructor() {
    document.documentElement.lang = this.language();
  }

  /** Reading it in a template tracks the language signal, so text switches without a reload. */
  readonly t: Translate = (messageKey: MessageKey, params?: Readonly<Record<string, string | number>>): string => {
    // Data from a newer server can name a status this build has no text for: show the key.
    let text: string = this.dictionary()[messageKey] ?? messageKey;
    if (params) {
      for (const [name, value] of Object.entries(params)) {
        text = text.replaceAll(`{${name}}`, String(value));
      }
    }
    return text;
  };

  setLanguage(language: Language): void {
    this.language.set(language);
    localStorage.setItem(KEY, language);
    document.documentElement.lang = language;
  }

  /** Short local date-time. */
  dateTime(iso: string | null): string {
    if (!iso) {
      return '';
    }
    return new Date(iso).toLocaleString(this.locale(), { dateStyle: 'short', timeStyle: 'short' });
  }

  /** 90 → "90 s", 3600 → "60 min": short and unambiguous in both languages. */
  interval(seconds: number): string {
    return seconds < 120
      ? this.t('time.seconds', { n: seconds })
      : this.t('time.minutes', { n: Math.round(seconds / 60) });
  }

  duration(fromIso: string, toIso: string | null, now = Date.now()): string {
    const ms = (toIso ? Date.parse(toIso) : now) - Date.parse(fromIso);
    const s = Math.max(0, Math.round(ms / 1000));
    return s < 120 ? this.t('time.seconds', { n: s }) : this.t('time.minutes', { n: Math.round(s / 60) });
  }
}
