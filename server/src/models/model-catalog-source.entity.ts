import { Column, Entity, PrimaryColumn } from 'typeorm';

import type { Provider } from '@libs/contracts';

/**
 * One provider's last listing and how its last refresh went: what the catalog serves after a
 * restart, and what it falls back to (stale) while a source fails.
 */
@Entity('model_catalog_source')
export class ModelCatalogSourceEntity {
  @PrimaryColumn('varchar') provider!: Provider;
  /** The listed models (CatalogModel[] as JSON) of the last successful refresh; '[]' before one. */
  @Column('text') models!: string;
  @Column('varchar', { nullable: true }) refreshedAt!: string | null;
  @Column('varchar', { nullable: true }) attemptedAt!: string | null;
  @Column('text', { nullable: true }) error!: string | null;
}
