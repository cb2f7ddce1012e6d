import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { TriggersModule } from '../triggers/triggers.module';
import { TimerScheduler } from './timer-scheduler.service';
import { TimersController } from './timers.controller';
import { TimersRepository } from './timers.repository';
import { TimersService } from './timers.service';

@Module({
  controllers: [TimersController],
  exports: [TimersService, TimerScheduler],
  imports: [RequirementsModule, TriggersModule],
  providers: [TimersRepository, TimersService, TimerScheduler],
})
export class TimersModule {}
