import { ApiProperty } from '@nestjs/swagger';
import { IsISO8601, ValidateIf } from 'class-validator';

import { NETWORK_MODES, NetworkBlocked, NetworkMode, NetworkStatus, RequirementNetwork } from '@libs/contracts';

import { HostRuleList } from '../../core/network/host-rule-list';
import { OptionalText, QueryInt } from '../../core/validation';
import type { NetworkBlockedEntity } from '../network.entities';

export class NetworkBlockedDto implements NetworkBlocked {
  @ApiProperty() id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty() runId!: string;
  @ApiProperty() host!: string;
  @ApiProperty() port!: number;
  @ApiProperty({ description: 'CONNECT (a tunnel: HTTPS and the like) or the HTTP method of a plain request' })
  method!: string;
  @ApiProperty() reason!: string;
  @ApiProperty({ description: 'Connections refused to this host and port in this run' }) count!: number;
  @ApiProperty() firstAt!: string;
  @ApiProperty() lastAt!: string;
}

export function toNetworkBlocked(row: NetworkBlockedEntity): NetworkBlockedDto {
  return {
    count: row.count,
    firstAt: row.firstAt,
    host: row.host,
    id: row.id,
    lastAt: row.lastAt,
    method: row.method,
    port: row.port,
    reason: row.reason,
    requirementId: row.requirementId,
    runId: row.runId,
  };
}

export class NetworkBlockedListDto {
  @ApiProperty({ type: [NetworkBlockedDto], description: 'Most recent first' }) items!: NetworkBlockedDto[];
}

export class NetworkBlockedQueryDto {
  @ValidateIf((_o, v) => v !== undefined)
  @IsISO8601({ strict: true })
  @ApiProperty({
    description: 'Only connections refused at or after this time (ISO 8601)',
    example: '2026-12-01T00:00:00.000Z',
    required: false,
    type: String,
  })
  since?: string;

  @OptionalText({ description: 'Only those of this Requirement', max: 100 })
  requirementId?: string;

  @QueryInt({ description: 'At most this many (default 200)', max: 1000, min: 1 })
  limit?: number;
}

export class NetworkStatusDto implements NetworkStatus {
  @ApiProperty({ enum: NETWORK_MODES }) mode!: NetworkMode;
  @ApiProperty({ description: 'Runs get a network namespace whose only way out is the filtering proxy' })
  isolated!: boolean;
  @ApiProperty({
    description: 'Why runs cannot be isolated here although the mode asks for it (runs are then refused), else null',
    nullable: true,
    type: String,
  })
  unavailableReason!: string | null;
  @ApiProperty({
    description:
      "Allowed without being listed: provider APIs, GitHub and the remotes' hosts, the lock files' registries",
    type: [String],
  })
  defaults!: string[];
  @ApiProperty({ type: [String] }) allow!: string[];
  @ApiProperty({ type: [String] }) deny!: string[];
}

export class RequirementNetworkDto implements RequirementNetwork {
  @ApiProperty() requirementId!: string;
  @ApiProperty({ description: 'Hosts its runs may reach besides the workspace allow-list', type: [String] })
  allow!: string[];
  @ApiProperty({
    type: [NetworkBlockedDto],
    description: 'What its runs were refused, most recent first (200 at most)',
  })
  blocked!: NetworkBlockedDto[];
}

export class UpdateRequirementNetworkDto {
  @HostRuleList(
    "Hosts this Requirement's runs may reach besides the workspace allow-list (replaces the list; applied to the next connection)",
  )
  allow?: string[];
}
