import { UsageError } from '@server/agent-tools/usage-error';

export { UsageError };

export function parseIntegerOption(flag: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}
