import { PageQueryDto } from '../../core/http/pagination';
import { QueryInt } from '../../core/validation';

export class ListMessagesQueryDto extends PageQueryDto {
  /** Only messages after this sequence (a simpler alternative to the cursor for followers). */
  @QueryInt({ description: 'Only messages with a larger sequence', max: Number.MAX_SAFE_INTEGER, min: 0 })
  afterSequence?: number;
}
