import { Inject, Injectable } from '@nestjs/common';

import { AttachmentsService } from '../attachments/attachments.service';
import { RdPromptMessage, RdWorkPlace, buildRdInstructions, buildRdPrompt, imagePaths } from '../agents/prompt';
import { Database } from '../core/database/database.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { MessagesRepository } from '../messages/messages.repository';
import { RequirementsRepository } from '../requirements/requirements.repository';
import { AgentEnvironmentService } from './agent-environment.service';
import type { AgentRunEntity } from './agent-run.entity';

export interface PreparedInput {
  instructions: string;
  prompt: string;
  images: string[];
  /** Attachment files the agent may read (bound read-only into its sandbox). */
  attachmentFiles: string[];
}

/** What an RD run is told: the instructions and its captured input, labelled and in order. */
@Injectable()
export class RunInputService {
  constructor(
    private readonly attachments: AttachmentsService,
    private readonly database: Database,
    private readonly environment: AgentEnvironmentService,
    private readonly messages: MessagesRepository,
    private readonly requirements: RequirementsRepository,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  get workspace(): string {
    return this.runtime.paths.root;
  }

  /**
   * Reads the run's input range (committed before the run was launched). `place` is where the
   * run works (its worktree, made by then), which the instructions name.
   */
  async prepare(run: AgentRunEntity, place: RdWorkPlace): Promise<PreparedInput> {
    const manager = this.database.readManager;
    const requirement = await this.requirements.findById(run.requirementId, manager);
    if (!requirement) {
      throw new Error(`run ${run.id} has no Requirement`); // runs go with their Requirement (cascade): a bug, not input
    }
    const rows = await this.messages.deliverableBetween(run.requirementId, run.inputFromSequence ?? 0, run.inputToSequence ?? 0, manager);
    const attachments = await this.attachments.forMessages(
      manager,
      rows.map((m) => m.id),
    );
    const sources = [...new Set(rows.map((m) => m.sourceRequirementId).filter((id): id is string => id !== null))];
    const titles = new Map<string, string>();
    for (const source of await this.requirements.findByIds(sources, manager)) {
      titles.set(source.id, source.title);
    }
    const messages: RdPromptMessage[] = rows.map((m) => ({
      attachments: (attachments.get(m.id) ?? []).map((a) => ({ fileName: a.fileName, kind: a.kind, path: this.attachments.filePath(a) })),
      author: m.author,
      body: m.body,
      sequence: m.sequence,
      sourceRequirement: m.sourceRequirementId ? { id: m.sourceRequirementId, title: titles.get(m.sourceRequirementId) ?? m.sourceRequirementId } : null,
    }));
    const parts: string[] = [];
    if (run.nativeSessionId === null) {
      // A new session has not seen the Requirement yet.
      parts.push(`# Requirement ${requirement.id}: ${requirement.title}\n\n${requirement.description.trim() || '(no description)'}`);
    }
    if (messages.length > 0) {
      parts.push(buildRdPrompt({ messages, provider: run.provider }));
    } else if (run.nativeSessionId !== null) {
      parts.push('Continue the work on this Requirement.');
    }
    return {
      attachmentFiles: await this.attachments.deliveredFiles(manager, run.requirementId, run.inputToSequence ?? 0),
      images: run.provider === 'codex' ? imagePaths(messages) : [],
      instructions: buildRdInstructions({ cliPath: this.environment.cliPath, place, requirementId: requirement.id, requirementTitle: requirement.title }),
      prompt: `${parts.join('\n\n')}\n`,
    };
  }
}
