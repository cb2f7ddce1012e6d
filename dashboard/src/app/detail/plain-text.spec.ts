import fc from 'fast-check';

import { PLAIN, plainHtml } from './plain-text';

// Plain chat lines skip Markdown and the sanitizer, so the test that picks them must never let
// markup (or anything Markdown would render differently) through.
describe('plain-text fast path', () => {
  it.each(['Timings are in place.', 'Line one\nline two', 'Ratio 3.5 is fine', 'a = b'])('takes %j', (text) => {
    expect(PLAIN.test(text)).toBe(true);
  });

  it.each([
    'a <b>x</b>',
    'x & y',
    'see https://example.com',
    'www.example.com',
    '**bold**',
    '`code`',
    '# title',
    '- item',
    'x\n1. first',
    'x\n===',
    'x\n    code',
    'a [link](u)',
    'ok (#3)',
    'a_b',
    'x\n- item',
  ])('leaves %j to Markdown', (text) => {
    expect(PLAIN.test(text)).toBe(false);
  });

  it('never passes HTML through, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        if (PLAIN.test(text)) {
          expect(text).not.toMatch(/[<>&]/);
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('keeps paragraphs and line breaks', () => {
    expect(plainHtml('one\ntwo\n\nthree\n')).toBe('<p>one<br>two</p><p>three</p>');
  });
});
