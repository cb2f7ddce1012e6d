import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiConflictResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { MoveResponseDto } from './dto/move-response.dto';
import { RequirementMoves } from './requirement-moves.service';

@ApiTags('team')
@Controller()
export class TeamController {
  constructor(private readonly moves: RequirementMoves) {}

  @Post('requirements/:id/move')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Team mode: move a Requirement to this runner. Its branch is fetched from the shared remote, its worktree made here at the next run, and its session goes on here as a new CLI session given the conversation so far (at once when input waits, e.g. the run its old runner lost)',
  })
  @ApiOkResponse({ type: MoveResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({
    description:
      'not_on_board, not_started (it runs on whoever starts it), already_here, requirement_closed, run_active (its runner is online and running it: stop it first), moved_meanwhile',
  })
  moveRequirement(@Param('id') id: string, @Actor() actor: EventActor): Promise<MoveResponseDto> {
    return this.moves.move(id, actor);
  }
}
