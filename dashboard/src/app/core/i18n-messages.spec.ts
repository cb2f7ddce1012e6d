import { en, zh } from './i18n-messages';

// The key type comes from `en` and `zh` is a Record of it, so a missing key fails the build; what
// the compiler cannot see is a translation that drops or renames a `{placeholder}`.

const placeholders = (text: string): string[] => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '').sort();

describe('i18n messages', () => {
  it('gives every Chinese text the same placeholders as its English one', () => {
    const mismatched = (Object.keys(en) as (keyof typeof en)[]).filter(
      (key) => placeholders(en[key]).join() !== placeholders(zh[key]).join(),
    );
    expect(mismatched).toEqual([]);
  });

  it('has no Chinese key that English lacks', () => {
    expect(Object.keys(zh).filter((key) => !(key in en))).toEqual([]);
  });
});
