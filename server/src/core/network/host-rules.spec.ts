import { firstMatch, parseHostRule, parseHostRules, ruleMatches } from './host-rules';

describe('network allow-list entries', () => {
  it('reads hosts, wildcard subdomains, ports and IPs', () => {
    expect(parseHostRule('API.OpenAI.com')).toEqual({
      host: 'api.openai.com',
      ip: false,
      port: null,
      text: 'API.OpenAI.com',
      wildcard: false,
    });
    expect(parseHostRule('*.anthropic.com')).toEqual({
      host: 'anthropic.com',
      ip: false,
      port: null,
      text: '*.anthropic.com',
      wildcard: true,
    });
    expect(parseHostRule('registry.npmjs.org:443')).toMatchObject({ host: 'registry.npmjs.org', port: 443 });
    expect(parseHostRule('127.0.0.1:4317')).toMatchObject({ host: '127.0.0.1', ip: true, port: 4317 });
    expect(parseHostRule('[::1]:443')).toMatchObject({ host: '::1', ip: true, port: 443 });
    expect(parseHostRule('::1')).toMatchObject({ host: '::1', ip: true, port: null });
  });

  it.each([
    ['https://api.openai.com', /without a scheme/],
    ['api.openai.com/v1', /without a scheme, user or path/],
    ['user@host.example', /without a scheme, user or path/],
    ['two words', /no spaces/],
    ['', /nothing empty/],
    ['*', /never everything/],
    ['*example.com', /never everything/],
    ['a.*.example.com', /never everything/],
    ['*.com', /not a host name/],
    ['host:http', /port that is not a number/],
    ['host:70000', /out of range/],
    ['-bad-.example', /not a host name/],
  ])('refuses %p, saying why', (entry, why) => {
    expect(parseHostRule(entry)).toMatch(why);
  });

  it('names every bad entry of a list', () => {
    const { errors, rules } = parseHostRules(['ok.example', 'https://bad', '*']);
    expect(rules.map((r) => r.host)).toEqual(['ok.example']);
    expect(errors).toHaveLength(2);
  });

  it('matches a host exactly, a wildcard only below its domain, and a port when given', () => {
    const exact = parseHostRule('api.openai.com') as Exclude<ReturnType<typeof parseHostRule>, string>;
    const wild = parseHostRule('*.anthropic.com') as Exclude<ReturnType<typeof parseHostRule>, string>;
    const port = parseHostRule('registry.npmjs.org:443') as Exclude<ReturnType<typeof parseHostRule>, string>;
    expect(ruleMatches(exact, 'API.openai.com.', 443)).toBe(true);
    expect(ruleMatches(exact, 'evil-api.openai.com', 443)).toBe(false);
    expect(ruleMatches(wild, 'api.anthropic.com', 443)).toBe(true);
    expect(ruleMatches(wild, 'anthropic.com', 443)).toBe(false);
    expect(ruleMatches(wild, 'evilanthropic.com', 443)).toBe(false);
    expect(ruleMatches(port, 'registry.npmjs.org', 443)).toBe(true);
    expect(ruleMatches(port, 'registry.npmjs.org', 80)).toBe(false);
    expect(firstMatch([exact, wild], 'x.anthropic.com', 443)).toBe(wild);
    expect(firstMatch([exact, wild], 'elsewhere.example', 443)).toBeNull();
  });
});
