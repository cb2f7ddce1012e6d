import { Inject, Injectable } from '@nestjs/common';

import { AttachmentsService } from '../attachments/attachments.service';
import { RdPromptMessage, RdWorkPlace, buildRdInstructions, buildRdPrompt, imagePaths } from '../agents/prompt';
import { RUNTIME, Runtime } from '../core/runtime';
import { MessagesService } from '../messages/messages.service';
import { RequirementsService } from '../requirements/requirements.service';
import { AgentEnvironmentService } from '../agents/agent-environment.service';
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
    private readonly environment: AgentEnvironmentService,
    private readonly messages: MessagesService,
    private readonly requirements: RequirementsService,
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
    const requirement = await this.requirements.findRow(run.requirementId);
    if (!requirement) {
      throw new Error(`run ${run.id} has no Requirement`); // runs go with their Requirement (cascade): a bug, not input
    }
    const rows = await this.messages.deliverableBetween(run.requirementId, run.inputFromSequence ?? 0, run.inputToSequence ?? 0);
    const attachments = await this.attachments.forMessages(rows.map((m) => m.id));
    const sources = [...new Set(rows.map((m) => m.sourceRequirementId).filter((id): id is string => id !== null))];
    const titles = await this.requirements.titlesOf(sources);
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
      attachmentFiles: await this.attachments.deliveredFiles(run.requirementId, run.inputToSequence ?? 0),
      images: run.provider === 'codex' ? imagePaths(messages) : [],
      instructions: buildRdInstructions({ cliPath: this.environment.cliPath, place, requirementId: requirement.id, requirementTitle: requirement.title }),
      prompt: `${parts.join('\n\n')}\n`,
    };
  }
}
