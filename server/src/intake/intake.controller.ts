import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { ForgeIssuePageDto, ListForgeIssuesQueryDto } from './dto/forge-issues.dto';
import { ImportIssuesDto, ImportedRequirementsDto } from './dto/import-issues.dto';
import { IssueImport } from './issue-import.service';
import { IssueList } from './issue-list.service';

@ApiTags('requirements')
@Controller('requirements')
export class IntakeController {
  constructor(private readonly issues: IssueImport) {}

  @Post('import')
  @ApiOperation({
    summary:
      "Import GitHub issues of the workspace's repository as Requirements (todo): title and description from the issue, `source` naming it",
  })
  @ApiCreatedResponse({ type: ImportedRequirementsDto })
  @ApiBadRequestResponse({
    description:
      'not_an_issue_url, not_a_workspace_remote, not_an_issue (a pull request), import_incomplete, import_ambiguous, or a create option refused',
  })
  @ApiNotFoundResponse({ description: 'issue_not_found: GitHub has no such issue (or the token cannot see it)' })
  @ApiConflictResponse({
    description: 'already_imported (names the Requirement in details), github_token_missing',
  })
  @ApiServiceUnavailableResponse({
    description:
      'forge_unavailable: GitHub could not be read (down, rate-limited: when to retry); nothing was imported',
  })
  async importIssues(@Body() body: ImportIssuesDto, @Actor() actor: EventActor): Promise<ImportedRequirementsDto> {
    return this.issues.import(body, actor);
  }
}

@ApiTags('requirements')
@Controller('forge')
export class ForgeController {
  constructor(private readonly issues: IssueList) {}

  @Get('issues')
  @ApiOperation({
    summary:
      "A page of a workspace repository's issues to import (newest first; pull requests left out), each with the Requirement it was imported as",
  })
  @ApiOkResponse({ type: ForgeIssuePageDto })
  @ApiBadRequestResponse({ description: 'not_a_workspace_remote, or a query field refused' })
  @ApiConflictResponse({ description: 'github_token_missing' })
  @ApiServiceUnavailableResponse({ description: 'forge_unavailable: GitHub could not be read (when to retry)' })
  listForgeIssues(@Query() query: ListForgeIssuesQueryDto): Promise<ForgeIssuePageDto> {
    return this.issues.list(query);
  }
}
