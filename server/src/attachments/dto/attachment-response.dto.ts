import { ApiProperty } from '@nestjs/swagger';

import { ATTACHMENT_KINDS, AttachmentKind, MessageAttachment } from '@libs/contracts';

import type { MessageAttachmentEntity } from '../message-attachment.entity';

export class AttachmentResponseDto implements MessageAttachment {
  @ApiProperty({ example: 'att_1c9e…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty({
    description: 'The message holding it; null until a start or reply uses it',
    nullable: true,
    type: String,
  })
  messageId!: string | null;
  @ApiProperty() fileName!: string;
  @ApiProperty({ enum: ATTACHMENT_KINDS }) kind!: AttachmentKind;
  @ApiProperty() mediaType!: string;
  @ApiProperty() byteSize!: number;
  @ApiProperty() createdAt!: string;
}

export function toAttachmentResponse(entity: MessageAttachmentEntity): AttachmentResponseDto {
  return {
    byteSize: entity.byteSize,
    createdAt: entity.createdAt,
    fileName: entity.fileName,
    id: entity.id,
    kind: entity.kind,
    mediaType: entity.mediaType,
    messageId: entity.messageId,
    requirementId: entity.requirementId,
  };
}
