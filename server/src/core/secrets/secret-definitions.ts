import * as path from 'node:path';

import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, ValidateBy, ValidateIf } from 'class-validator';

import type { SecretDefinition } from '@libs/contracts';

import { type HostRule, parseHostRule } from '../network/host-rules';

/** A configured secret as the API shows it: its name and where its value comes from, never the value. */
export class SecretDefinitionDto implements SecretDefinition {
  @ApiProperty({ description: 'The variable it is given as (and, without file, the manager variable it is read from)' })
  name!: string;
  @ApiProperty({ description: 'A 0600 file holding the value', nullable: true, required: false, type: String })
  file?: string | null;
  @ApiProperty({ description: 'The host whose requests get the header', nullable: true, required: false, type: String })
  host?: string | null;
  @ApiProperty({ description: 'The header the proxy adds', nullable: true, required: false, type: String })
  header?: string | null;
  @ApiProperty({
    description: 'The header value, {value} standing for the secret',
    nullable: true,
    required: false,
    type: String,
  })
  format?: string | null;
  @ApiProperty({
    description:
      "Also given to previews as a variable (issue 48): they run the agent's working copy, so only a value you would let the agent's code use",
    nullable: true,
    required: false,
    type: Boolean,
  })
  preview?: boolean | null;
}

/** Secrets one configuration holds at most. */
export const SECRETS_MAX = 100;
/** An environment variable's name, exactly (no prefix `*` here: a secret is one value). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** An HTTP header's name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
/** Headers the proxy owns or that would change how a request is framed: never set from a secret. */
const RESERVED_HEADERS = new Set([
  'connection',
  'content-length',
  'host',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
const FIELDS = new Set(['name', 'file', 'host', 'header', 'format', 'preview']);

/** A secret as the services use it: its definition checked, the host parsed. */
export interface SecretSpec {
  name: string;
  file: string | null;
  /** The header the proxy adds to requests for `host` (one host, maybe one port), or null. */
  injection: { host: HostRule; header: string; format: string } | null;
  /** Given to previews as a variable too (the person's choice: they run what the agent wrote). */
  preview: boolean;
}

/** Checks one definition; the errors say which field of which entry is wrong. */
export function parseSecretDefinition(value: unknown, index: number): SecretSpec | string[] {
  const where = `secrets[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [`${where} must be an object ({name, file?, host?, header?, format?, preview?})`];
  }
  const entry = value as Record<string, unknown>;
  const errors = Object.keys(entry)
    .filter((key) => !FIELDS.has(key))
    .map((key) => `${where}.${key} should not exist`);
  const text = (key: string): string | null => {
    const field = entry[key];
    if (field === undefined || field === null) {
      return null;
    }
    if (typeof field !== 'string') {
      errors.push(`${where}.${key} must be a string`);
      return null;
    }
    return field;
  };
  const name = text('name');
  if (name === null || !SECRET_NAME.test(name)) {
    errors.push(
      `${where}.name ${name === null ? 'is required' : `"${name.slice(0, 140)}" is not an environment variable name`} (letters, digits and _, not starting with a digit)`,
    );
  }
  const file = text('file');
  if (file !== null && (!path.isAbsolute(file) || file.includes('\0') || file.length > 4096)) {
    errors.push(`${where}.file must be an absolute path`);
  }
  const hostText = text('host');
  const header = text('header');
  const format = text('format');
  let host: HostRule | null = null;
  if (hostText !== null) {
    const parsed = parseHostRule(hostText);
    if (typeof parsed === 'string') {
      errors.push(`${where}.host: ${parsed}`);
    } else if (parsed.wildcard) {
      errors.push(`${where}.host "${hostText}" must name one host, not a wildcard: a secret goes to one place`);
    } else {
      host = parsed;
    }
  }
  if (header !== null && (!HEADER_NAME.test(header) || RESERVED_HEADERS.has(header.toLowerCase()))) {
    errors.push(`${where}.header "${header.slice(0, 100)}" is not a header a secret may set`);
  }
  if (format !== null && (!format.includes('{value}') || /[\r\n\0]/.test(format) || format.length > 500)) {
    errors.push(`${where}.format must hold {value} on one line (at most 500 characters)`);
  }
  if ((hostText === null) !== (header === null)) {
    errors.push(`${where}: host and header go together (the proxy adds the header to that host's requests)`);
  }
  if (format !== null && header === null) {
    errors.push(`${where}.format needs a header`);
  }
  if (entry.preview !== undefined && entry.preview !== null && typeof entry.preview !== 'boolean') {
    errors.push(`${where}.preview must be true or false`);
  }
  if (errors.length > 0) {
    return errors;
  }
  return {
    file,
    injection: host && header ? { format: format ?? '{value}', header, host } : null,
    name: name as string,
    preview: entry.preview === true,
  };
}

/** Checks a whole list: duplicate names are refused too (one name, one value). */
export function parseSecretDefinitions(values: unknown): { specs: SecretSpec[]; errors: string[] } {
  if (!Array.isArray(values)) {
    return { errors: ['secrets must be an array'], specs: [] };
  }
  const specs: SecretSpec[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  values.forEach((value, index) => {
    const parsed = parseSecretDefinition(value, index);
    if (Array.isArray(parsed)) {
      errors.push(...parsed);
    } else if (seen.has(parsed.name)) {
      errors.push(`secrets[${index}].name "${parsed.name}" is defined twice`);
    } else {
      seen.add(parsed.name);
      specs.push(parsed);
    }
  });
  return { errors, specs };
}

/** The configuration's `secrets`: a 400 names every field of every entry that is wrong. */
export function SecretList(description: string) {
  return applyDecorators(
    ApiPropertyOptional({ description, isArray: true, type: SecretDefinitionDto }),
    ValidateIf((_o, v) => v !== undefined),
    IsArray(),
    ArrayMaxSize(SECRETS_MAX),
    ValidateBy({
      name: 'secrets',
      validator: {
        defaultMessage: (args) => parseSecretDefinitions(args?.value).errors.join('; ').slice(0, 2000),
        validate: (value: unknown) => parseSecretDefinitions(value).errors.length === 0,
      },
    }),
  );
}
