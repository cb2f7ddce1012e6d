import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { EditorsController } from './editors.controller';
import { EditorsService } from './editors.service';

/** Opening a working copy in the person's editor (issue 48 §5): reads Requirements, writes nothing. */
@Module({
  controllers: [EditorsController],
  imports: [RequirementsModule],
  providers: [EditorsService],
})
export class EditorsModule {}
