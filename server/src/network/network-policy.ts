import { BlockList, isIP } from 'node:net';
import * as os from 'node:os';

import { type HostRule, firstMatch, normalizeHost } from '../core/network/host-rules';

/** How much of the network a run's sandbox reaches through its proxy (issue 45). */
export type NetworkMode = 'allow_list' | 'open' | 'offline';

/** One run's view of the rules: what the workspace allows and denies, and what its Requirement adds. */
export interface NetworkPolicy {
  mode: NetworkMode;
  allow: readonly HostRule[];
  deny: readonly HostRule[];
  /** The Requirement's own additions (the person's choice; an agent's proposal cannot widen it). */
  requirementAllow: readonly HostRule[];
  /**
   * Always reachable, whatever the mode: the manager itself (the agent API and its MCP) and the
   * model API the run's CLI talks to. Without them no run could work, offline included.
   */
  essential: readonly HostRule[];
}

export type NetworkDecision =
  | { allowed: true; rule: HostRule | null; essential: boolean }
  | { allowed: false; reason: string; rule: HostRule | null };

/** Whether a connection to `host:port` may be opened, before any name is resolved. */
export function decide(policy: NetworkPolicy, host: string, port: number): NetworkDecision {
  const essential = firstMatch(policy.essential, host, port);
  if (essential) {
    return { allowed: true, essential: true, rule: essential };
  }
  const denied = firstMatch(policy.deny, host, port);
  if (denied) {
    return { allowed: false, reason: `${normalizeHost(host)}:${port} is denied by "${denied.text}"`, rule: denied };
  }
  if (policy.mode === 'offline') {
    return {
      allowed: false,
      reason: `the network is offline for agents: only the model API and Agent Manager are reachable`,
      rule: null,
    };
  }
  if (policy.mode === 'open') {
    return { allowed: true, essential: false, rule: null };
  }
  const allowed = firstMatch(policy.requirementAllow, host, port) ?? firstMatch(policy.allow, host, port);
  if (allowed) {
    return { allowed: true, essential: false, rule: allowed };
  }
  return { allowed: false, reason: `${normalizeHost(host)}:${port} is not on the allow-list`, rule: null };
}

/**
 * Addresses a name on the allow-list must not lead to: this machine (loopback, its own interfaces),
 * link-local (the cloud metadata service at 169.254.169.254 among them) and the unspecified
 * address. An allowed name that resolves there is refused (a DNS answer an agent or a hostile
 * zone controls must not open the machine's own services); an entry the person wrote as an IP,
 * and the essential hosts, are taken as written.
 */
export class InternalAddresses {
  private readonly list = new BlockList();

  constructor(interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]> = os.networkInterfaces()) {
    this.list.addSubnet('127.0.0.0', 8, 'ipv4');
    this.list.addSubnet('169.254.0.0', 16, 'ipv4');
    this.list.addSubnet('0.0.0.0', 8, 'ipv4');
    this.list.addAddress('::1', 'ipv6');
    this.list.addAddress('::', 'ipv6');
    this.list.addSubnet('fe80::', 10, 'ipv6');
    // IPv4-mapped IPv6 forms of the IPv4 ranges above.
    this.list.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
    this.list.addSubnet('::ffff:169.254.0.0', 112, 'ipv6');
    for (const entries of Object.values(interfaces)) {
      for (const entry of entries ?? []) {
        const family = entry.family === 'IPv6' ? 'ipv6' : 'ipv4';
        this.list.addAddress(entry.address.replace(/%.*$/, ''), family);
      }
    }
  }

  /** Whether `address` (an IP) is one of this machine's or link-local. */
  has(address: string): boolean {
    const plain = address.replace(/%.*$/, '');
    const family = isIP(plain);
    return family !== 0 && this.list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  }
}
