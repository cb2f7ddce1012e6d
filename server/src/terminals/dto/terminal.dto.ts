import { ApiProperty } from '@nestjs/swagger';

import type { Terminal } from '@libs/contracts';

import { OptionalInt, ValidateText } from '../../core/validation';
import { IsInt, Max, Min } from 'class-validator';

/** A terminal's size in character cells. */
export const TERMINAL_SIZE_MAX = 1000;
/** What one input request carries at most (a paste). */
export const TERMINAL_INPUT_MAX = 65_536;

export class TerminalDto implements Terminal {
  @ApiProperty({ example: 'term_0123456789abcdef' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty() createdAt!: string;
  @ApiProperty() rows!: number;
  @ApiProperty() cols!: number;
}

export class TerminalListDto {
  @ApiProperty({ type: [TerminalDto] }) items!: TerminalDto[];
}

export class OpenTerminalDto {
  @OptionalInt({ description: 'Rows (default 24)', max: TERMINAL_SIZE_MAX, min: 1 })
  rows?: number;
  @OptionalInt({ description: 'Columns (default 80)', max: TERMINAL_SIZE_MAX, min: 1 })
  cols?: number;
}

export class TerminalSizeDto {
  @ApiProperty({ maximum: TERMINAL_SIZE_MAX, minimum: 1 })
  @IsInt()
  @Min(1)
  @Max(TERMINAL_SIZE_MAX)
  rows!: number;
  @ApiProperty({ maximum: TERMINAL_SIZE_MAX, minimum: 1 })
  @IsInt()
  @Min(1)
  @Max(TERMINAL_SIZE_MAX)
  cols!: number;
}

export class TerminalInputDto {
  @ValidateText({ description: 'What was typed or pasted, as the terminal sends it', max: TERMINAL_INPUT_MAX, min: 1 })
  data!: string;
}
