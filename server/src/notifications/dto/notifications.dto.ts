import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';

import {
  ATTENTION_REASONS,
  AttentionReason,
  DELIVERY_STATUSES,
  DeliveryStatus,
  NOTIFICATION_KINDS,
  NotificationDelivery,
  NotificationDeliveryItem,
  NotificationKind,
} from '@libs/contracts';

export class DeliveryRequirementDto {
  @ApiProperty() id!: string;
  @ApiProperty() title!: string;
}

export class NotificationDeliveryItemDto implements NotificationDeliveryItem {
  @ApiProperty({ description: 'The Needs-you item' }) id!: string;
  @ApiProperty({ enum: ATTENTION_REASONS }) reason!: AttentionReason;
  @ApiProperty() since!: string;
  @ApiProperty() summary!: string;
  @ApiProperty({ type: DeliveryRequirementDto }) requirement!: DeliveryRequirementDto;
  @ApiProperty({ description: "The Requirement's page in the dashboard" }) link!: string;
}

export class NotificationDeliveryDto implements NotificationDelivery {
  @ApiProperty({ description: 'The same on every retry (X-Agent-Manager-Delivery)', example: 'dlv_3e1f…' }) id!: string;
  @ApiProperty() channelId!: string;
  @ApiProperty({ enum: NOTIFICATION_KINDS }) kind!: NotificationKind;
  @ApiProperty({ enum: DELIVERY_STATUSES }) status!: DeliveryStatus;
  @ApiProperty({ type: [NotificationDeliveryItemDto] }) items!: NotificationDeliveryItemDto[];
  @ApiProperty() attempts!: number;
  @ApiProperty({ nullable: true, type: String }) lastError!: string | null;
  @ApiProperty() createdAt!: string;
  @ApiProperty({ description: 'When it is tried again (pending only)', nullable: true, type: String })
  nextAttemptAt!: string | null;
  @ApiProperty({ nullable: true, type: String }) deliveredAt!: string | null;
}

export class NotificationDeliveryListDto {
  @ApiProperty({ type: [NotificationDeliveryDto] }) items!: NotificationDeliveryDto[];
}

export class DeliveriesQueryDto {
  @ApiPropertyOptional({ description: 'At most this many, newest first (default 100)', maximum: 500, minimum: 1 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({ description: "Only one channel's" })
  @IsOptional()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, { message: 'channel must be a channel id' })
  channel?: string;
}
