import { ApiProperty } from '@nestjs/swagger';

import {
  type CatalogModel,
  MODEL_SOURCES,
  type ModelCatalog,
  type ModelCatalogProvider,
  type ModelSource,
  PROVIDERS,
  type Provider,
  REASONING_EFFORTS,
  type ReasoningEffort,
} from '@libs/contracts';

import { OptionalEnum } from '../../core/validation';

export class ListModelsQueryDto {
  @OptionalEnum(PROVIDERS, "Only this provider's models")
  provider?: Provider;
}

export class CatalogModelDto implements CatalogModel {
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  /** The value for a Requirement's `model`. */
  @ApiProperty({ example: 'gpt-6.2-sol' }) id!: string;
  @ApiProperty({ example: 'GPT-6.2-Sol' }) label!: string;
  /** The reasoning efforts the provider accepts for this model (those a Requirement can carry). */
  @ApiProperty({ enum: REASONING_EFFORTS, isArray: true }) efforts!: ReasoningEffort[];
  /** Where the entry comes from: the provider's listing, Claude Code's aliases, the configuration or the built-in list. */
  @ApiProperty({ enum: MODEL_SOURCES }) source!: ModelSource;
}

export class ModelCatalogProviderDto implements ModelCatalogProvider {
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  /** The last successful listing; null while there has been none (the built-in list is served). */
  @ApiProperty({ nullable: true, type: String }) refreshedAt!: string | null;
  /** The last attempt, successful or not. */
  @ApiProperty({ nullable: true, type: String }) attemptedAt!: string | null;
  /** True when the last attempt failed or there has been none: the entries are the last good listing or the built-in list. */
  @ApiProperty() stale!: boolean;
  /** Why the last attempt failed; null when it succeeded. */
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
}

export class ModelCatalogResponseDto implements ModelCatalog {
  @ApiProperty({ type: [CatalogModelDto] }) items!: CatalogModelDto[];
  /** The oldest provider's last successful listing; null while one has never been listed. */
  @ApiProperty({ nullable: true, type: String }) refreshedAt!: string | null;
  /** True when any provider's part is stale (see `providers` for which, and why). */
  @ApiProperty() stale!: boolean;
  @ApiProperty({ type: [ModelCatalogProviderDto] }) providers!: ModelCatalogProviderDto[];
}
