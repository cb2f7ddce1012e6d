import { ApiProperty } from '@nestjs/swagger';

import { ATTENTION_REASONS, AttentionItem, AttentionList, AttentionPerson, AttentionReason } from '@libs/contracts';

import type { AttentionItemEntity } from '../attention-item.entity';

export class AttentionPersonDto implements AttentionPerson {
  @ApiProperty({ description: "The person's stable id (the same on every manager they run)" }) id!: string;
  @ApiProperty() name!: string;
}

export class AttentionItemDto implements AttentionItem {
  @ApiProperty({ example: 'atn_1c9e…', description: 'Stable while the item is open' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: ATTENTION_REASONS }) reason!: AttentionReason;
  @ApiProperty({ description: 'When its cause began, as far as the state says' }) since!: string;
  @ApiProperty({ description: 'One line: what happened, in words' }) summary!: string;
  @ApiProperty({ type: AttentionPersonDto }) person!: AttentionPersonDto;
}

export class AttentionListDto implements AttentionList {
  @ApiProperty({ type: [AttentionItemDto] }) items!: AttentionItemDto[];
}

export function toAttentionItem(row: AttentionItemEntity): AttentionItemDto {
  return {
    id: row.id,
    person: { id: row.personId, name: row.personName },
    reason: row.reason,
    requirementId: row.requirementId,
    since: row.since,
    summary: row.summary,
  };
}

/** Oldest first, then by reason's place in the list (a stable order for equal times). */
export function byAttentionOrder(a: AttentionItem, b: AttentionItem): number {
  return a.since < b.since
    ? -1
    : a.since > b.since
      ? 1
      : ATTENTION_REASONS.indexOf(a.reason) - ATTENTION_REASONS.indexOf(b.reason);
}
