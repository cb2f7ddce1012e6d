import { LIMITS } from '@libs/contracts';

import { OptionalIdList, OptionalText } from '../../core/validation';

export class ReplyDto {
  @OptionalIdList({
    description: `Uploaded attachment IDs (at most ${LIMITS.attachmentsPerMessage})`,
    max: LIMITS.attachmentsPerMessage,
  })
  attachmentIds?: string[];

  @OptionalText({ description: 'Message text; may be omitted when attachments are present', max: LIMITS.messageLength })
  message?: string;
}

/** Whether a reply carries anything: text that is not blank, or at least one attachment. */
export function hasReplyContent(dto: ReplyDto): boolean {
  return (dto.message ?? '').trim() !== '' || (dto.attachmentIds ?? []).length > 0;
}
