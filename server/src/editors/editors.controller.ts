import { Body, Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';

import type { ActorRequest } from '../core/http/actor.decorator';
import { EditorDto, EditorListDto, OpenInEditorDto } from './dto/editors.dto';
import { EditorsService, OpenRequester } from './editors.service';

const requester = (req: ActorRequest): OpenRequester => ({
  device: req.device !== undefined,
  remoteAddress: req.socket.remoteAddress,
});

/** Opening a working copy in the person's editor (issue 48 §5). */
@ApiTags('editors')
@Controller()
export class EditorsController {
  constructor(private readonly editors: EditorsService) {}

  @Get('editors')
  @ApiOperation({ summary: 'The editors found on this machine that can open a working copy' })
  @ApiOkResponse({ type: EditorListDto })
  listEditors(@Req() req: ActorRequest): Promise<EditorListDto> {
    return this.editors.available(requester(req));
  }

  @Post('requirements/:id/open')
  @HttpCode(200)
  @ApiOperation({ summary: "Opens the Requirement's working copy in an editor on this machine" })
  @ApiOkResponse({ type: EditorDto })
  @ApiBadRequestResponse({ description: 'An app that is not one of the known ones' })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  @ApiConflictResponse({
    description:
      'not_local (asked from a paired device or another machine), no_worktree, editor_not_found, runs_on_other_runner, worktree_untrusted (details: what would run; send confirm: true)',
  })
  @ApiForbiddenResponse({ description: 'authentication_off: with authentication "none" nothing opens an editor' })
  @ApiServiceUnavailableResponse({ description: 'editor_failed: the command could not start' })
  openInEditor(@Param('id') id: string, @Body() body: OpenInEditorDto, @Req() req: ActorRequest): Promise<EditorDto> {
    return this.editors.open(id, body.app, requester(req), body.confirm === true);
  }
}
