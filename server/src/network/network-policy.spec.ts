import { type HostRule, parseHostRule } from '../core/network/host-rules';
import { InternalAddresses, type NetworkPolicy, decide } from './network-policy';

const rules = (...texts: string[]): HostRule[] => texts.map((t) => parseHostRule(t) as HostRule);
const base: NetworkPolicy = {
  allow: rules('*.example.com', 'registry.npmjs.org:443'),
  deny: rules('bad.example.com'),
  essential: rules('127.0.0.1:4310'),
  mode: 'allow_list',
  requirementAllow: [],
};

describe('network policy', () => {
  it('decides essential first, then deny, then the mode, then what the workspace and the Requirement allow', () => {
    expect(decide(base, 'api.example.com', 443)).toMatchObject({
      allowed: true,
      essential: false,
      rule: { text: '*.example.com' },
    });
    expect(decide(base, 'registry.npmjs.org', 80)).toEqual({
      allowed: false,
      reason: 'registry.npmjs.org:80 is not on the allow-list',
      rule: null,
    });
    expect(decide(base, 'BAD.example.com.', 443)).toMatchObject({
      allowed: false,
      reason: 'bad.example.com:443 is denied by "bad.example.com"',
    });
    expect(decide({ ...base, deny: rules('127.0.0.1') }, '127.0.0.1', 4310)).toMatchObject({
      allowed: true,
      essential: true,
    });
    expect(decide({ ...base, mode: 'offline' }, 'api.example.com', 443)).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('offline'),
    });
    expect(decide({ ...base, mode: 'offline' }, '127.0.0.1', 4310)).toMatchObject({ allowed: true, essential: true });
    expect(decide({ ...base, mode: 'open' }, 'anything.test', 22)).toEqual({
      allowed: true,
      essential: false,
      rule: null,
    });
    expect(decide({ ...base, mode: 'open' }, 'bad.example.com', 443)).toMatchObject({ allowed: false });
    expect(decide({ ...base, requirementAllow: rules('pypi.org') }, 'pypi.org', 443)).toMatchObject({
      allowed: true,
      rule: { text: 'pypi.org' },
    });
  });

  it("knows this machine's addresses, loopback and link-local in both families", () => {
    const internal = new InternalAddresses({
      eth0: [{ address: '10.1.2.3', cidr: null, family: 'IPv4', internal: false, mac: '', netmask: '255.0.0.0' }],
    });
    for (const address of [
      '127.0.0.1',
      '127.9.9.9',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1%eth0',
      '::ffff:127.0.0.1',
      '10.1.2.3',
    ]) {
      expect([address, internal.has(address)]).toEqual([address, true]);
    }
    for (const address of ['10.1.2.4', '93.184.216.34', '2606:4700::1111', 'not-an-ip']) {
      expect([address, internal.has(address)]).toEqual([address, false]);
    }
  });
});
