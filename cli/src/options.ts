/** A problem with how the program was called or where: printed as one line, exit code 1. */
export class UsageError extends Error {}

export function parseIntegerOption(flag: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}
