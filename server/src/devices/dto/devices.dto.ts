import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

import type { Device, Pairing } from '@libs/contracts';

import { DEVICE_NAME_MAX } from '../devices.service';

export class DeviceDto implements Device {
  @ApiProperty({ example: 'dev_3e1f…' }) id!: string;
  @ApiProperty({ example: 'Phone' }) name!: string;
  @ApiProperty({ description: "The pairing browser's User-Agent", nullable: true, type: String })
  userAgent!: string | null;
  @ApiProperty() pairedAt!: string;
  @ApiProperty({ description: 'Its last request, to the minute', nullable: true, type: String })
  lastSeenAt!: string | null;
  @ApiProperty({ description: 'The device that asks' }) current!: boolean;
  @ApiProperty({ description: 'The pairing link it came from' }) pairingId!: string;
}

export class DeviceListDto {
  @ApiProperty({ type: [DeviceDto] }) items!: DeviceDto[];
}

export class CreatePairingDto {
  @ApiPropertyOptional({
    description: 'What to call the device (the phone may rename it when it pairs)',
    maxLength: DEVICE_NAME_MAX,
    nullable: true,
    type: String,
  })
  @IsOptional()
  @IsString()
  @MaxLength(DEVICE_NAME_MAX)
  name?: string | null;
}

export class PairingDto implements Pairing {
  @ApiProperty({ example: 'pair_3e1f…' }) id!: string;
  @ApiProperty({ description: 'The one-time link: opened on the phone, it pairs that browser (10 minutes)' })
  url!: string;
  @ApiProperty({ description: 'The link as a QR code (an SVG image as a data: URL)' }) qrCode!: string;
  @ApiProperty() name!: string;
  @ApiProperty() expiresAt!: string;
  @ApiProperty({
    description:
      '`loopback_only`: the manager answers on loopback only, so a phone reaches the link through a tunnel; null: the link names the address served beyond loopback',
    enum: ['loopback_only'],
    nullable: true,
    type: String,
  })
  reachability!: 'loopback_only' | null;
}
