import { DynamicModule, Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import { types as pgTypes } from 'pg';
import * as sqlite3 from 'sqlite3';
import type { DataSourceOptions } from 'typeorm';

import { MessageAttachmentEntity } from '../attachments/message-attachment.entity';
import { RequirementDependencyEntity } from '../requirements/requirement-dependency.entity';
import { EventBus } from './event-bus';
import { EventLog } from '../events/event-log.service';
import { EventsRepository } from '../events/events.repository';
import { ManagerEventEntity } from '../events/manager-event.entity';
import { ReactionCursorEntity } from '../events/reaction-cursor.entity';
import { ModelCatalogSourceEntity } from '../models/model-catalog-source.entity';
import { RequirementMessageEntity } from '../messages/requirement-message.entity';
import { AgentSessionEntity } from '../requirements/agent-session.entity';
import { PullRequestEntity } from '../pull-requests/pull-request.entity';
import { AgentRunEntity } from '../runs/agent-run.entity';
import { ReviewRequestEntity } from '../reviews/review-request.entity';
import {
  ReviewCommentEntity,
  ReviewReplyEntity,
  ReviewViewedFileEntity,
} from '../review-comments/review-comment.entities';
import { SearchDocumentEntity } from '../search/search-document.entity';
import { TriggerReceiptEntity } from '../triggers/trigger-receipt.entity';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import { RequirementCheckpointEntity } from '../worktrees/requirement-checkpoint.entity';
import { RequirementLandingEntity } from '../requirements/requirement-landing.entity';
import { AttentionItemEntity } from '../requirements/attention-item.entity';
import { NotificationDeliveryEntity, NotificationPendingEntity } from '../notifications/notification.entities';
import { DeviceEntity, PairingLinkEntity } from '../devices/device.entities';
import { LandingQueueEntity } from '../landing/landing-queue.entity';
import { AgentTimerEntity } from '../timers/agent-timer.entity';
import { RequirementEntity } from '../requirements/requirement.entity';
import { NetworkBlockedEntity, RequirementNetworkEntity } from '../network/network.entities';
import { Clock } from './clock';
import { ConfigurationService } from './configuration/configuration.service';
import { READER_DATA_SOURCE } from './database/database.constants';
import { Database } from './database/database.service';
import { DomainEvents } from './domain-events';
import { MIGRATIONS } from './database/migrations';
import { SnakeNamingStrategy } from './database/snake-naming.strategy';
import { type Store, pgClientConfig } from './database/store';
import { RUNTIME, Runtime } from './runtime';
import { SecretsService } from './secrets/secrets.service';

export const ENTITIES = [
  AgentRunEntity,
  AgentSessionEntity,
  AgentTimerEntity,
  LandingQueueEntity,
  MessageAttachmentEntity,
  ManagerEventEntity,
  ModelCatalogSourceEntity,
  NetworkBlockedEntity,
  PullRequestEntity,
  ReactionCursorEntity,
  RequirementCheckpointEntity,
  RequirementDependencyEntity,
  RequirementEntity,
  RequirementLandingEntity,
  AttentionItemEntity,
  NotificationDeliveryEntity,
  NotificationPendingEntity,
  DeviceEntity,
  PairingLinkEntity,
  RequirementMessageEntity,
  RequirementNetworkEntity,
  RequirementWorktreeEntity,
  ReviewCommentEntity,
  ReviewReplyEntity,
  ReviewRequestEntity,
  ReviewViewedFileEntity,
  SearchDocumentEntity,
  TriggerReceiptEntity,
];

const BUSY_TIMEOUT_MS = 5000;

/**
 * TypeORM calls `sqlite3.verbose()`, which wraps every database call to capture a stack trace
 * and `util.inspect` its arguments: measured as the largest CPU cost of a write. Hand TypeORM
 * the plain module instead.
 */
const QUIET_SQLITE3 = { ...sqlite3, verbose: () => sqlite3 };

/** The options both data sources share, for the configured store. */
export function dataSourceOptions(store: Store): DataSourceOptions {
  if (store.kind === 'sqlite') {
    return {
      busyTimeout: BUSY_TIMEOUT_MS,
      database: store.path,
      driver: QUIET_SQLITE3,
      enableWAL: true,
      entities: ENTITIES,
      namingStrategy: new SnakeNamingStrategy(),
      synchronize: false,
      type: 'sqlite',
    };
  }
  usePlainIntegers();
  const { connectionString, ssl, ...extra } = pgClientConfig(store, 'agent-manager');
  return {
    entities: ENTITIES,
    extra,
    namingStrategy: new SnakeNamingStrategy(),
    poolSize: store.poolSize,
    schema: store.schema,
    synchronize: false,
    type: 'postgres',
    url: connectionString,
    ...(ssl ? { ssl } : {}),
  };
}

/** On PostgreSQL the writer needs one connection (the write path's) and one for the migrations and start-up reads. */
function writerPool(store: Store): { poolSize?: number } {
  return store.kind === 'postgres' ? { poolSize: 2 } : {};
}

/**
 * COUNT(*) and SUM() are bigint on PostgreSQL, which node-postgres reads as strings; every
 * number the store holds fits a double, so read them as numbers as SQLite does.
 */
export function usePlainIntegers(): void {
  pgTypes.setTypeParser(INT8_OID, (value) => Number(value));
}

const INT8_OID = 20;

/** Cross-cutting providers every feature module uses: runtime facts, clock, database, events. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(runtime: Runtime): DynamicModule {
    const common = dataSourceOptions(runtime.store);
    return {
      exports: [
        Clock,
        ConfigurationService,
        Database,
        DomainEvents,
        EventBus,
        EventLog,
        EventsRepository,
        RUNTIME,
        SecretsService,
      ],
      global: true,
      imports: [
        DiscoveryModule,
        // The writer runs migrations before anything else touches the file.
        TypeOrmModule.forRoot({
          ...common,
          ...writerPool(runtime.store),
          migrations: MIGRATIONS,
          migrationsRun: true,
          migrationsTransactionMode: 'each',
        } as DataSourceOptions),
        // Opened only after the writer (and so the migrations) finished: injecting its token orders them.
        TypeOrmModule.forRootAsync({
          inject: [getDataSourceToken()],
          name: READER_DATA_SOURCE,
          useFactory: () => ({ ...common, name: READER_DATA_SOURCE }),
        }),
      ],
      module: CoreModule,
      providers: [
        { provide: Clock, useValue: runtime.clock ?? new Clock() },
        Database,
        DomainEvents,
        EventBus,
        EventLog,
        EventsRepository,
        { provide: RUNTIME, useValue: runtime },
        { provide: ConfigurationService, useValue: runtime.configuration },
        SecretsService,
      ],
    };
  }
}
