import { isIP } from 'node:net';

/**
 * The network allow-list's entries (issue 45): `host`, `*.domain` (its subdomains, not the domain
 * itself), either with `:port`, or an IP (`127.0.0.1:4317`, `[::1]:443`). An entry names where a
 * connection may go; it never carries a scheme, a path, spaces or a bare `*`.
 */
export interface HostRule {
  /** As written (for messages and the settings). */
  text: string;
  /** Lower-case host, without `*.` (an IP as written, IPv6 without brackets). */
  host: string;
  wildcard: boolean;
  /** null: any port. */
  port: number | null;
  /** Written as an IP: the person meant that address (loopback included). */
  ip: boolean;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Parses one entry, or says in one line why it is not one. */
export function parseHostRule(entry: string): HostRule | string {
  const text = entry.trim();
  if (text === '' || /\s/.test(text)) {
    return `"${entry}" is not a host: no spaces, nothing empty`;
  }
  if (
    /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ||
    text.includes('/') ||
    text.includes('?') ||
    text.includes('#') ||
    text.includes('@')
  ) {
    return `"${entry}" is not a host: write the host alone (example.com, *.example.com, example.com:443), without a scheme, user or path`;
  }
  let hostPart = text;
  let port: number | null = null;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/i.exec(text);
  if (bracketed) {
    hostPart = bracketed[1];
    port = bracketed[2] === undefined ? null : Number(bracketed[2]);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const [name, digits] = text.split(':');
    if (!/^\d{1,5}$/.test(digits)) {
      return `"${entry}" has a port that is not a number`;
    }
    hostPart = name;
    port = Number(digits);
  } else if (text.includes(':') && isIP(text) !== 6) {
    return `"${entry}" is not a host: an IPv6 address with a port goes in brackets ([::1]:443)`;
  }
  if (port !== null && (port < 1 || port > 65_535)) {
    return `"${entry}" has a port out of range (1–65535)`;
  }
  const lower = hostPart.toLowerCase();
  if (isIP(lower) !== 0) {
    return { host: lower, ip: true, port, text, wildcard: false };
  }
  if (lower === '*' || (lower.startsWith('*') && !lower.startsWith('*.')) || lower.slice(1).includes('*')) {
    return `"${entry}" is not a host: a wildcard names subdomains (*.example.com), never everything`;
  }
  const wildcard = lower.startsWith('*.');
  const name = wildcard ? lower.slice(2) : lower;
  const labels = name.replace(/\.$/, '').split('.');
  if (labels.length === 0 || labels.some((label) => !LABEL.test(label)) || (wildcard && labels.length < 2)) {
    return `"${entry}" is not a host name`;
  }
  return { host: labels.join('.'), ip: false, port, text, wildcard };
}

/** Parses a list; the errors name every entry that is not one. */
export function parseHostRules(entries: readonly string[]): { rules: HostRule[]; errors: string[] } {
  const rules: HostRule[] = [];
  const errors: string[] = [];
  for (const entry of entries) {
    const parsed = parseHostRule(entry);
    if (typeof parsed === 'string') {
      errors.push(parsed);
    } else {
      rules.push(parsed);
    }
  }
  return { errors, rules };
}

/** Lower-case, brackets and a trailing dot gone: how a connection's host is compared. */
export function normalizeHost(host: string): string {
  return host
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/** Whether `rule` covers a connection to `host:port`. */
export function ruleMatches(rule: HostRule, host: string, port: number): boolean {
  if (rule.port !== null && rule.port !== port) {
    return false;
  }
  const name = normalizeHost(host);
  return rule.wildcard ? name.endsWith(`.${rule.host}`) : name === rule.host;
}

/** The first rule of `rules` that covers the connection, or null. */
export function firstMatch(rules: readonly HostRule[], host: string, port: number): HostRule | null {
  return rules.find((rule) => ruleMatches(rule, host, port)) ?? null;
}
