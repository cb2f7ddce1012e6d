import { ApiProperty } from '@nestjs/swagger';

import { MessageResponseDto } from '../../messages/dto/message-response.dto';
import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';
import { ReviewCommentDto } from './review-comment.dto';

/** A review sent: its one message (delivered as a reply is), and the comments it sent. */
export class SentReviewResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ description: 'True when the message waits for a later run rather than starting one now' })
  queued!: boolean;
  @ApiProperty({ type: MessageResponseDto }) message!: MessageResponseDto;
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
  @ApiProperty({ type: [ReviewCommentDto] }) reviewComments!: ReviewCommentDto[];
}
