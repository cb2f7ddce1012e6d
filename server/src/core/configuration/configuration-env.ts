import type { ConfigurationKey } from './configuration.schema';

/** Env variable for a field: `pullRequestReconcileIntervalSeconds` → `CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS`. */
export function envName(key: ConfigurationKey): string {
  return `CODE_FACTORY_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}
