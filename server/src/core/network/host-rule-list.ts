import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsString, MaxLength, ValidateBy, ValidateIf } from 'class-validator';

import { parseHostRule } from './host-rules';

/** Entries of one list at most: a person's list, not a blocklist feed. */
export const HOST_RULES_MAX = 500;

/**
 * An optional list of network allow-list entries (issue 45): a 400 names every entry that is not
 * a host (`"https://x/y" is not a host: …`), so a person sees which one to fix.
 */
export function HostRuleList(description: string) {
  return applyDecorators(
    ApiPropertyOptional({ description, isArray: true, type: String }),
    ValidateIf((_o, v) => v !== undefined),
    IsArray(),
    ArrayMaxSize(HOST_RULES_MAX),
    IsString({ each: true }),
    MaxLength(300, { each: true }),
    ValidateBy({
      name: 'hostRules',
      validator: {
        defaultMessage: (args) =>
          `${args?.property}: ${hostRuleErrors(args?.value as unknown[]).join('; ')}`.slice(0, 2000),
        validate: (value: unknown) => hostRuleErrors(value).length === 0,
      },
    }),
  );
}

function hostRuleErrors(value: unknown): string[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.flatMap((entry) => {
    if (typeof entry !== 'string') {
      return [];
    }
    const parsed = parseHostRule(entry);
    return typeof parsed === 'string' ? [parsed] : [];
  });
}
