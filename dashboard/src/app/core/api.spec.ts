import { inWords } from './api';

describe('inWords', () => {
  it('keeps the first line as the headline and the rest, each line once, for the details', () => {
    const provider = '{"error":{"type":"overloaded_error","message":"Overloaded"}}';
    const message = `The model refused the request.\n${provider}\n${provider}\n\n${provider}\n${provider}`;
    expect(inWords(message)).toEqual({ headline: 'The model refused the request.', rest: provider });
  });

  it('cuts a very long first line for the toast and keeps it whole in the details', () => {
    const long = 'x'.repeat(300);
    const { headline, rest } = inWords(long);
    expect(headline).toHaveLength(200);
    expect(headline.endsWith('…')).toBe(true);
    expect(rest).toBe(long);
  });

  it('leaves a one-line message as it is', () => {
    expect(inWords('Edited elsewhere')).toEqual({ headline: 'Edited elsewhere', rest: '' });
  });
});
