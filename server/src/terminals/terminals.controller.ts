import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';

import { OpenTerminalDto, TerminalDto, TerminalInputDto, TerminalListDto, TerminalSizeDto } from './dto/terminal.dto';
import { TerminalsService } from './terminals.service';

/** Terminals on a Requirement's working copy (issue 48 §4). */
@ApiTags('terminals')
@Controller()
export class TerminalsController {
  constructor(private readonly terminals: TerminalsService) {}

  @Get('requirements/:id/terminals')
  @ApiOperation({ summary: "The terminals open on the Requirement's working copy" })
  @ApiOkResponse({ type: TerminalListDto })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  async listTerminals(@Param('id') id: string): Promise<TerminalListDto> {
    return { items: await this.terminals.list(id) };
  }

  @Post('requirements/:id/terminals')
  @ApiOperation({
    summary:
      "Opens a shell on the Requirement's working copy, in its agent's sandbox; attach to its stream within 10 s (it closes 10 s after its last page)",
  })
  @ApiCreatedResponse({ type: TerminalDto })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  @ApiConflictResponse({ description: 'no_worktree, too_many_terminals (8 open)' })
  @ApiServiceUnavailableResponse({
    description: 'terminal_unavailable (no util-linux script), network_isolation_unavailable',
  })
  openTerminal(@Param('id') id: string, @Body() body: OpenTerminalDto): Promise<TerminalDto> {
    return this.terminals.open(id, body.rows ?? 24, body.cols ?? 80);
  }

  @Get('terminals/:terminalId/stream')
  @ApiOperation({
    summary:
      "The terminal's output (SSE): its scrollback, then each chunk as it comes, base64 in `data`; an event `closed` ({reason}) when it closes",
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'An endless text/event-stream' })
  @ApiNotFoundResponse({ description: 'terminal_not_found' })
  streamTerminal(@Param('terminalId') terminalId: string, @Req() req: Request, @Res() res: Response): void {
    this.terminals.attach(terminalId, req, res);
  }

  @Post('terminals/:terminalId/input')
  @HttpCode(204)
  @ApiOperation({ summary: 'Types into the terminal' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'terminal_not_found' })
  typeIntoTerminal(@Param('terminalId') terminalId: string, @Body() body: TerminalInputDto): void {
    this.terminals.input(terminalId, body.data);
  }

  @Post('terminals/:terminalId/resize')
  @HttpCode(204)
  @ApiOperation({ summary: 'Resizes the terminal (what runs in it is told, as a window resize does)' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'terminal_not_found' })
  resizeTerminal(@Param('terminalId') terminalId: string, @Body() body: TerminalSizeDto): Promise<void> {
    return this.terminals.resize(terminalId, body.rows, body.cols);
  }

  @Delete('terminals/:terminalId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Closes the terminal and ends everything it started' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'terminal_not_found' })
  closeTerminal(@Param('terminalId') terminalId: string): Promise<void> {
    return this.terminals.remove(terminalId);
  }
}
