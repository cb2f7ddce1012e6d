import { assertInScope } from './agent-scope.decorator';
import { isAllowedHost, isAllowedOrigin, parseHost } from './request-policy';

describe('request policy', () => {
  it.each([
    ['127.0.0.1:4310', '127.0.0.1', true],
    ['localhost', '127.0.0.1', true],
    ['[::1]:4310', '127.0.0.1', true],
    ['LOCALHOST:4310', '127.0.0.1', true],
    ['devbox.lan:4310', 'devbox.lan', true],
    ['devbox.lan:4310', '0.0.0.0', false],
    ['evil.example', '127.0.0.1', false],
    ['127.0.0.1@evil.example', '127.0.0.1', false],
    ['127.0.0.1:4310:1', '127.0.0.1', false],
    [undefined, '127.0.0.1', false],
  ])('host %s with configured host %s → %s', (host, configured, allowed) => {
    expect(isAllowedHost(host, configured)).toBe(allowed);
  });

  it("serves a TLS certificate's names, on a wildcard bind and beside a named host", () => {
    const names = ['phone.tail.ts.net', '[fd7a::1]'];
    expect(isAllowedHost('phone.tail.ts.net:4310', '0.0.0.0', names)).toBe(true);
    expect(isAllowedHost('[fd7a::1]:4310', '::', names)).toBe(true);
    expect(isAllowedHost('phone.tail.ts.net', '100.64.0.1', names)).toBe(true);
    expect(isAllowedHost('other.tail.ts.net:4310', '0.0.0.0', names)).toBe(false);
    expect(isAllowedHost('127.0.0.1:4310', '0.0.0.0', names)).toBe(true);
  });

  it('expects the https origin of a page served over TLS', () => {
    expect(isAllowedOrigin('https://phone.test:1', 'phone.test:1', null, 'https')).toBe(true);
    expect(isAllowedOrigin('http://phone.test:1', 'phone.test:1', null, 'https')).toBe(false);
    expect(isAllowedOrigin('https://phone.test:1', 'phone.test:1', null, 'http')).toBe(false);
  });

  it('parses bracketed IPv6 hosts', () => {
    expect(parseHost('[::1]:80')).toEqual({ name: '[::1]', port: '80' });
  });

  it('lets requests without Origin through to authentication, and same or configured origins only', () => {
    expect(isAllowedOrigin(undefined, 'localhost:1', null)).toBe(true);
    expect(isAllowedOrigin('http://localhost:1', 'localhost:1', null)).toBe(true);
    expect(isAllowedOrigin('http://127.0.0.1:1', 'localhost:1', null)).toBe(false);
    expect(isAllowedOrigin('http://localhost:4200', 'localhost:1', 'http://localhost:4200')).toBe(true);
    expect(isAllowedOrigin('null', 'localhost:1', null)).toBe(false);
  });

  it('refuses an agent naming another Requirement or session, and lets the owner name any', () => {
    const run = { kind: 'run' as const, scope: { requirementId: 'req_a', runId: 'run_a', sessionId: 'ses_a' } };
    expect(() => assertInScope(run, { requirementId: 'req_a', sessionId: 'ses_a' })).not.toThrow();
    expect(() => assertInScope(run, { requirementId: 'req_b' })).toThrow('not req_b');
    expect(() => assertInScope(run, { sessionId: 'ses_b' })).toThrow('not ses_b');
    expect(() => assertInScope({ kind: 'owner' }, { requirementId: 'req_b', sessionId: 'ses_b' })).not.toThrow();
  });
});
