import { personActor, personId, personText } from './person';

describe('personText', () => {
  it('makes one plain line of whatever it is given: controls, bidi overrides and line breaks become one space', () => {
    expect(personText('  Eve\u001b[31m\u202e\r\nX-Injected: yes\u0007\u0085 ', 100)).toBe('Eve [31m X-Injected: yes');
    expect(personText('\u0000\u200b\u2066\ufeff', 100)).toBe('');
  });

  it('cuts at whole code points, never half of a surrogate pair', () => {
    const cut = personText('😀'.repeat(150), 100);
    expect(Array.from(cut)).toHaveLength(100);
    expect(cut).toBe('😀'.repeat(100));
  });
});

describe('personId', () => {
  it('is the same for an email however it is cased, whatever the name, and differs between people', () => {
    expect(personId('Ada', 'Ada@Example.com')).toBe(personId('Ada Lovelace', 'ada@example.com'));
    expect(personId('Ada', 'ada@example.com')).not.toBe(personId('Ada', 'grace@example.com'));
    expect(personId('Ada', null)).not.toBe(personId('Grace', null));
    expect(personId('Ada', null)).toMatch(/^person_[0-9a-f]{24}$/);
  });

  it('gives the actor a person acts as', () => {
    expect(personActor({ email: null, id: 'person_1', name: 'Ada', source: 'os' })).toEqual({
      email: null,
      id: 'person_1',
      kind: 'human',
      name: 'Ada',
    });
  });
});
