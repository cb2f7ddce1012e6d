import { ApiProperty } from '@nestjs/swagger';

import {
  MESSAGE_AUTHORS,
  MessageAuthor,
  RequirementMessage,
  SYSTEM_MESSAGE_CODES,
  SystemMessageArgs,
  SystemMessageCode,
} from '@libs/contracts';

import { AttachmentResponseDto } from '../../attachments/dto/attachment-response.dto';
import { PageInfoDto } from '../../core/http/pagination';
import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';
import type { RequirementMessageEntity } from '../requirement-message.entity';

export class MessageResponseDto implements RequirementMessage {
  @ApiProperty({ example: 'msg_7d1a…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty() sessionId!: string;
  @ApiProperty({ nullable: true, type: String }) runId!: string | null;
  @ApiProperty({ description: 'The sending Requirement of a related RD agent message', nullable: true, type: String })
  sourceRequirementId!: string | null;
  @ApiProperty({ enum: MESSAGE_AUTHORS }) author!: MessageAuthor;
  @ApiProperty({
    description: "On a person's message: the person's stable id (null on others' and older messages)",
    nullable: true,
    type: String,
  })
  authorId!: string | null;
  @ApiProperty({
    description: "On a person's message: the person's name when they wrote it",
    nullable: true,
    type: String,
  })
  authorName!: string | null;
  @ApiProperty() body!: string;
  @ApiProperty({ type: [AttachmentResponseDto] }) attachments!: AttachmentResponseDto[];
  @ApiProperty({ description: 'Gap-free, increasing within the Requirement' }) sequence!: number;
  @ApiProperty({ description: 'Whether the RD agent must consume it' }) deliverToRd!: boolean;
  @ApiProperty() createdAt!: string;
  @ApiProperty({ description: 'Trigger source (github, timer) or null', nullable: true, type: String }) source!:
    string | null;
  @ApiProperty({ nullable: true, type: String }) triggerId!: string | null;
  @ApiProperty({ additionalProperties: true, nullable: true, type: Object }) metadata!: Record<string, unknown> | null;
  @ApiProperty({
    description:
      "What a message Agent Manager wrote itself says, for a client that writes it in the reader's language; null on people's and agents' messages (and on older ones). Unknown codes: show `body`.",
    enum: SYSTEM_MESSAGE_CODES,
    nullable: true,
    type: String,
  })
  code!: SystemMessageCode | null;
  @ApiProperty({
    additionalProperties: { oneOf: [{ nullable: true, type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
    description: "The values `code`'s text names (titles, ids, numbers)",
    nullable: true,
    type: Object,
  })
  args!: SystemMessageArgs | null;
}

export class MessagePageDto extends PageInfoDto {
  @ApiProperty({ type: [MessageResponseDto] }) items!: MessageResponseDto[];
}

export class ReplyResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: ['reply'] }) action!: 'reply';
  @ApiProperty({ description: 'True when the message waits for a later run rather than starting one now' })
  queued!: boolean;
  @ApiProperty({ type: MessageResponseDto }) message!: MessageResponseDto;
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
}

export function toMessageResponse(
  entity: RequirementMessageEntity,
  attachments: AttachmentResponseDto[],
): MessageResponseDto {
  return {
    args: entity.args ?? null,
    attachments,
    author: entity.author,
    authorId: entity.authorId ?? null,
    authorName: entity.authorName ?? null,
    body: entity.body,
    code: entity.code ?? null,
    createdAt: entity.createdAt,
    deliverToRd: entity.deliverToRd,
    id: entity.id,
    metadata: entity.metadata,
    requirementId: entity.requirementId,
    runId: entity.runId,
    sequence: entity.sequence,
    sessionId: entity.sessionId,
    source: entity.source,
    sourceRequirementId: entity.sourceRequirementId,
    triggerId: entity.triggerId,
  };
}
