import { OptionalText } from '../../core/validation';

export class StreamEventsQueryDto {
  /** Replay the persisted events after this id before going live. */
  @OptionalText({
    description: 'Replay persisted events with a larger id first (at most 200 per connection)',
    example: '42',
    max: 16,
  })
  after?: string;
}
