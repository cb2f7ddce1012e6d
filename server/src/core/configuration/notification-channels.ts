import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, ValidateBy, ValidateIf } from 'class-validator';

import {
  ATTENTION_REASONS,
  AttentionReason,
  NOTIFICATION_KINDS,
  NotificationChannel,
  NotificationKind,
} from '@libs/contracts';

/** A channel as the API shows and takes it. */
export class NotificationChannelDto implements NotificationChannel {
  @ApiProperty({ description: 'Its name, unique in the list', example: 'phone' }) id!: string;
  @ApiProperty({ enum: NOTIFICATION_KINDS }) kind!: NotificationKind;
  @ApiProperty({
    description: 'Where to POST (http or https); null for desktop',
    nullable: true,
    type: String,
  })
  url!: string | null;
  @ApiProperty({
    description: 'Only these reasons (null: every reason)',
    enum: ATTENTION_REASONS,
    isArray: true,
    nullable: true,
  })
  reasons!: AttentionReason[] | null;
  @ApiProperty({ description: "Only this person's items (person_…; null: everyone's)", nullable: true, type: String })
  person!: string | null;
  @ApiProperty({ description: 'Sends only what is still open after this many seconds (0: at once)' })
  delaySeconds!: number;
}

/** Channels one configuration holds at most. */
export const CHANNELS_MAX = 20;
/** The longest delay: a day. */
export const DELAY_MAX_SECONDS = 86_400;
const CHANNEL_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const PERSON_ID = /^person_[0-9a-f]{24}$/;
const FIELDS = new Set(['id', 'kind', 'url', 'reasons', 'person', 'delaySeconds']);

/** Checks one channel; the errors name the field of the entry that is wrong. */
export function parseNotificationChannel(value: unknown, index: number): NotificationChannel | string[] {
  const where = `notificationChannels[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [`${where} must be an object ({id, kind, url?, reasons?, person?, delaySeconds?})`];
  }
  const entry = value as Record<string, unknown>;
  const errors = Object.keys(entry)
    .filter((key) => !FIELDS.has(key))
    .map((key) => `${where}.${key} should not exist`);
  const id = typeof entry.id === 'string' && CHANNEL_ID.test(entry.id) ? entry.id : null;
  if (id === null) {
    errors.push(`${where}.id must be a name of letters, digits, - and _ (at most 63)`);
  }
  const kind = (NOTIFICATION_KINDS as readonly unknown[]).includes(entry.kind)
    ? (entry.kind as NotificationKind)
    : null;
  if (kind === null) {
    errors.push(`${where}.kind must be one of ${NOTIFICATION_KINDS.join(', ')}`);
  }
  const url = entry.url === undefined || entry.url === null ? null : entry.url;
  if (kind === 'desktop' && url !== null) {
    errors.push(`${where}.url must be null for a desktop channel`);
  } else if (kind !== 'desktop' && kind !== null && !httpUrl(url)) {
    errors.push(`${where}.url must be an http or https URL without a user or password`);
  }
  const reasons = entry.reasons === undefined || entry.reasons === null ? null : entry.reasons;
  if (
    reasons !== null &&
    (!Array.isArray(reasons) ||
      reasons.length === 0 ||
      !reasons.every((r) => (ATTENTION_REASONS as readonly unknown[]).includes(r)))
  ) {
    errors.push(`${where}.reasons must be null or a list of ${ATTENTION_REASONS.join(', ')}`);
  }
  const person = entry.person === undefined || entry.person === null ? null : entry.person;
  if (person !== null && (typeof person !== 'string' || !PERSON_ID.test(person))) {
    errors.push(`${where}.person must be null or a person id (person_…)`);
  }
  const delay = entry.delaySeconds ?? 0;
  if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > DELAY_MAX_SECONDS) {
    errors.push(`${where}.delaySeconds must be a whole number from 0 to ${DELAY_MAX_SECONDS}`);
  }
  if (errors.length > 0) {
    return errors;
  }
  return {
    delaySeconds: delay as number,
    id: id as string,
    kind: kind as NotificationKind,
    person: person as string | null,
    reasons: reasons === null ? null : [...new Set(reasons as AttentionReason[])],
    url: url as string | null,
  };
}

function httpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || value.length > 2048) {
    return false;
  }
  try {
    const url = new URL(value);
    // No user:password@: fetch refuses such a URL, so every send would fail for a day.
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.hostname !== '' &&
      url.username === '' &&
      url.password === ''
    );
  } catch {
    return false;
  }
}

/** Checks a whole list: ids are unique. */
export function parseNotificationChannels(values: unknown): { channels: NotificationChannel[]; errors: string[] } {
  if (!Array.isArray(values)) {
    return { channels: [], errors: ['notificationChannels must be an array'] };
  }
  const channels: NotificationChannel[] = [];
  const errors: string[] = [];
  values.forEach((value, index) => {
    const parsed = parseNotificationChannel(value, index);
    if (Array.isArray(parsed)) {
      errors.push(...parsed);
    } else if (channels.some((c) => c.id === parsed.id)) {
      errors.push(`notificationChannels[${index}].id "${parsed.id}" is used twice`);
    } else {
      channels.push(parsed);
    }
  });
  return { channels, errors };
}

/** The configuration's `notificationChannels`: a 400 names every field of every entry that is wrong. */
export function NotificationChannelList(description: string) {
  return applyDecorators(
    ApiPropertyOptional({ description, isArray: true, type: NotificationChannelDto }),
    ValidateIf((_o, v) => v !== undefined),
    IsArray(),
    ArrayMaxSize(CHANNELS_MAX),
    ValidateBy({
      name: 'notificationChannels',
      validator: {
        defaultMessage: (args) => parseNotificationChannels(args?.value).errors.join('; ').slice(0, 2000),
        validate: (value: unknown) => parseNotificationChannels(value).errors.length === 0,
      },
    }),
  );
}
