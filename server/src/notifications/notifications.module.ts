import { Module } from '@nestjs/common';

import { AttentionModule } from '../attention/attention.module';
import { NotificationsController } from './notifications.controller';
import { NotificationsRepository } from './notifications.repository';
import { NotificationsService } from './notifications.service';

/** Needs you outside the browser (issue 47 §3). Owns `notification_pending` and `notification_delivery`. */
@Module({
  controllers: [NotificationsController],
  imports: [AttentionModule],
  providers: [NotificationsRepository, NotificationsService],
})
export class NotificationsModule {}
