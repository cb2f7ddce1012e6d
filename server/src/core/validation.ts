import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsNumber,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';

// `undefined` (absent) skips validation; `null` is only accepted where a field is nullable,
// so PATCH {"host": null} is a 400 rather than a silently cleared value.
const unlessAbsent = () => ValidateIf((_o, v) => v !== undefined);
const unlessAbsentOrNull = () => ValidateIf((_o, v) => v !== null && v !== undefined);

// Composite decorators: validation and OpenAPI are declared once per field, so the document
// and the checks cannot drift apart.

interface TextOptions {
  description: string;
  min?: number;
  max: number;
  example?: string;
  pattern?: RegExp;
}

/** A required string, trimmed of nothing (bodies keep their whitespace), within bounds. */
export function ValidateText(options: TextOptions) {
  return applyDecorators(
    ApiProperty({
      description: options.description,
      example: options.example,
      maxLength: options.max,
      minLength: options.min ?? 0,
      type: String,
    }),
    IsString(),
    MinLength(options.min ?? 0),
    MaxLength(options.max),
    ...(options.pattern ? [Matches(options.pattern)] : []),
  );
}

/** An optional string; `nullable` also accepts null (stored as "not set"). */
export function OptionalText(options: TextOptions & { nullable?: boolean }) {
  return applyDecorators(
    ApiPropertyOptional({
      description: options.description,
      example: options.example,
      maxLength: options.max,
      nullable: options.nullable,
      type: String,
    }),
    options.nullable ? unlessAbsentOrNull() : unlessAbsent(),
    IsString(),
    MinLength(options.min ?? 0),
    MaxLength(options.max),
    ...(options.pattern ? [Matches(options.pattern)] : []),
  );
}

export function ValidateEnum(values: readonly string[], description: string) {
  return applyDecorators(ApiProperty({ description, enum: [...values] }), IsIn([...values]));
}

export function OptionalEnum(values: readonly string[], description: string, nullable = false) {
  return applyDecorators(
    ApiPropertyOptional({ description, enum: [...values], nullable }),
    nullable ? unlessAbsentOrNull() : unlessAbsent(),
    IsIn([...values]),
  );
}

export function OptionalInt(options: { description: string; min: number; max: number; nullable?: boolean }) {
  return applyDecorators(
    ApiPropertyOptional({
      description: options.description,
      maximum: options.max,
      minimum: options.min,
      nullable: options.nullable,
      type: Number,
    }),
    options.nullable ? unlessAbsentOrNull() : unlessAbsent(),
    IsInt(),
    Min(options.min),
    Max(options.max),
  );
}

/** An optional finite number (not only whole) within bounds; `nullable` also accepts null. */
export function OptionalNumber(options: { description: string; min: number; max: number; nullable?: boolean }) {
  return applyDecorators(
    ApiPropertyOptional({
      description: options.description,
      maximum: options.max,
      minimum: options.min,
      nullable: options.nullable,
      type: Number,
    }),
    options.nullable ? unlessAbsentOrNull() : unlessAbsent(),
    IsNumber({ allowInfinity: false, allowNaN: false }),
    Min(options.min),
    Max(options.max),
  );
}

/** An optional list of strings (a configuration list). */
export function OptionalTextList(options: { description: string; max: number; maxLength: number; pattern?: RegExp }) {
  return applyDecorators(
    ApiPropertyOptional({ description: options.description, isArray: true, type: String }),
    unlessAbsent(),
    IsArray(),
    ArrayMaxSize(options.max),
    IsString({ each: true }),
    MinLength(1, { each: true }),
    MaxLength(options.maxLength, { each: true }),
    ...(options.pattern ? [Matches(options.pattern, { each: true })] : []),
  );
}

/** A list of IDs in a body. */
export function OptionalIdList(options: { description: string; max: number }) {
  return applyDecorators(
    ApiPropertyOptional({ description: options.description, isArray: true, type: String }),
    unlessAbsent(),
    IsArray(),
    ArrayMaxSize(options.max),
    IsString({ each: true }),
    MaxLength(100, { each: true }),
  );
}

/**
 * A query-string integer: query values arrive as strings, so convert explicitly and let the
 * validator reject anything that is not a whole number in range.
 */
export function QueryInt(options: { description: string; min: number; max: number }) {
  return applyDecorators(
    Transform(({ value }) => (typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : value)),
    OptionalInt(options),
  );
}
