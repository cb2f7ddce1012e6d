// Pure checks on request headers, shared by the HTTP middleware and unit specs.

import { isWildcardHost } from '../core/http/serving';

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/** Splits a Host header into name and port; null when it is malformed. */
export function parseHost(host: string | undefined): { name: string; port: string | null } | null {
  if (!host || host.length > 300) {
    return null;
  }
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host);
  if (!match?.[1]) {
    return null;
  }
  return { name: match[1].toLowerCase(), port: match[2] ?? null };
}

/**
 * DNS-rebinding defence: a page on evil.example that resolves its name to 127.0.0.1 still
 * sends `Host: evil.example`, so only loopback names and the configured host are served.
 */
export function isAllowedHost(
  host: string | undefined,
  configuredHost: string,
  certificateNames: readonly string[] = [],
): boolean {
  const parsed = parseHost(host);
  if (!parsed) {
    return false;
  }
  const configured =
    configuredHost.includes(':') && !configuredHost.startsWith('[') ? `[${configuredHost}]` : configuredHost;
  // A wildcard bind serves loopback only by name, and the certificate's names (which a browser has
  // verified by the time it sends Host); anything else must be configured explicitly.
  const names = isWildcardHost(configuredHost)
    ? [...LOOPBACK_NAMES, ...certificateNames]
    : [...LOOPBACK_NAMES, configured.toLowerCase(), ...certificateNames];
  return names.includes(parsed.name);
}

/**
 * CSRF defence for state-changing requests: a browser always sends Origin on a cross-origin
 * POST/PATCH/DELETE. Requests without Origin (curl, the CLI, agents) pass to authentication.
 */
export function isAllowedOrigin(
  origin: string | undefined,
  host: string | undefined,
  allowedOrigin: string | null,
  scheme: 'http' | 'https' = 'http',
): boolean {
  if (origin === undefined) {
    return true;
  }
  if (host !== undefined && origin === `${scheme}://${host}`) {
    return true;
  }
  return allowedOrigin !== null && origin === allowedOrigin;
}

export const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
