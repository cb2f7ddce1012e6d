import { ServingRefused, canonicalIpv6, isLoopbackHost, planServing } from './serving';

describe('serving', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['::1', true],
    ['localhost', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.168.1.5', false],
    ['phone.tail.ts.net', false],
    ['127.0.0.1.evil.example', false],
  ])('%s is loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });

  it('serves plain HTTP on loopback, and beyond it only when asked for explicitly', () => {
    expect(planServing('127.0.0.1', {}).serving).toEqual({ certificateNames: [], scheme: 'http' });
    expect(() => planServing('0.0.0.0', {})).toThrow(ServingRefused);
    expect(() => planServing('192.168.1.5', { insecureHttp: false })).toThrow(/requires TLS/);
    expect(planServing('192.168.1.5', { insecureHttp: true }).serving.scheme).toBe('http');
  });

  it('keeps authentication "none" on loopback', () => {
    expect(() => planServing('0.0.0.0', { authentication: 'none', insecureHttp: true })).toThrow(/loopback only/);
    expect(planServing('127.0.0.1', { authentication: 'none' }).serving.scheme).toBe('http');
  });

  it('writes an IPv6 name as a browser sends it in Host', () => {
    expect(canonicalIpv6('FD7A:115C:0:0:0:0:0:1')).toBe('[fd7a:115c::1]');
    expect(canonicalIpv6('[::1]')).toBe('[::1]');
  });

  it('wants the certificate and its key together', () => {
    expect(() => planServing('127.0.0.1', { tlsCertPath: '/x.crt' })).toThrow(/go together/);
    expect(() => planServing('127.0.0.1', { tlsKeyPath: '/x.key' })).toThrow(/go together/);
  });
});
