import { Injectable, computed, signal } from '@angular/core';

import { type Dictionary, type I18nKey, en, zh } from './i18n-messages';

// Two dictionaries switched at run time (a signal), rather than Angular's build-time i18n, which
// would need one build per language and a reload to switch.

export type { I18nKey };

export type Language = 'en' | 'zh-CN';
const DICTIONARIES: Record<Language, Dictionary> = { en, 'zh-CN': zh };
const KEY = 'am.language';

function initialLanguage(): Language {
  const saved = localStorage.getItem(KEY);
  if (saved === 'en' || saved === 'zh-CN') {
    return saved;
  }
  return navigator.languages.some((l) => l.toLowerCase().startsWith('zh')) ? 'zh-CN' : 'en';
}

@Injectable({ providedIn: 'root' })
export class I18n {
  readonly language = signal<Language>(initialLanguage());
  private readonly dictionary = computed(() => DICTIONARIES[this.language()]);
  readonly locale = computed(() => (this.language() === 'zh-CN' ? 'zh-CN' : 'en-GB'));

  constructor() {
    document.documentElement.lang = this.language();
  }

  /** Reading it in a template tracks the language signal, so text switches without a reload. */
  readonly t = (key: I18nKey, params?: Record<string, string | number>): string => {
    // An unknown key shows itself rather than nothing, so a gap is visible.
    let text: string = this.dictionary()[key] ?? key;
    if (params) {
      for (const [name, value] of Object.entries(params)) {
        text = text.replace(`{${name}}`, String(value));
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
    return seconds < 120 ? this.t('time.seconds', { n: seconds }) : this.t('time.minutes', { n: Math.round(seconds / 60) });
  }

  duration(fromIso: string, toIso: string | null, now = Date.now()): string {
    const ms = (toIso ? Date.parse(toIso) : now) - Date.parse(fromIso);
    const s = Math.max(0, Math.round(ms / 1000));
    return s < 120 ? this.t('time.seconds', { n: s }) : this.t('time.minutes', { n: Math.round(s / 60) });
  }
}
