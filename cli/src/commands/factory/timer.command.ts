import { Command, CommandRunner, Help, Option, SubCommand } from 'nest-commander';

import { LIMITS } from '@libs/contracts';

import { ENVIRONMENT_HELP } from '@server/agent-tools/agent-context';
import { AgentOperations } from '@server/agent-tools/agent-operations';
import { printJson } from '@server/agent-tools/manager-api';
import { UsageError, parseIntegerOption } from '../../options';

interface RegisterFlags {
  description?: string;
  afterSeconds?: number;
  repeat?: boolean;
}

@SubCommand({
  description: 'Schedule a wake-up for the current Requirement: once after N seconds, or every N seconds with --repeat',
  name: 'register',
})
export class TimerRegisterCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: RegisterFlags): Promise<void> {
    if (!flags.description?.trim()) {
      throw new UsageError('--description is required');
    }
    if (flags.afterSeconds === undefined) {
      throw new UsageError('--after-seconds is required');
    }
    printJson(
      await this.operations.registerTimer({
        afterSeconds: flags.afterSeconds,
        description: flags.description,
        repeat: flags.repeat,
      }),
    );
  }

  @Option({
    description: `What to do when woken (1–${LIMITS.timerDescriptionLength} characters); it is repeated in the "Timer fired." message`,
    flags: '--description <text>',
  })
  parseDescription(value: string): string {
    return value;
  }

  @Option({
    description: `Seconds until it fires (${LIMITS.timerIntervalMinSeconds}–${LIMITS.timerIntervalMaxSeconds}); with --repeat, the interval`,
    flags: '--after-seconds <n>',
  })
  parseAfterSeconds(value: string): number {
    return parseIntegerOption('--after-seconds', value, LIMITS.timerIntervalMinSeconds, LIMITS.timerIntervalMaxSeconds);
  }

  @Option({
    description: 'Fire every --after-seconds until cancelled (missed occurrences are skipped, not replayed)',
    flags: '--repeat',
  })
  parseRepeat(): boolean {
    return true;
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli timer register --description "Check compiler status" --after-seconds 3600
  code-factory-cli timer register --description "Check compiler status" --after-seconds 900 --repeat

When it fires, a system message starting "Timer fired." wakes your session. Timers end
when the Requirement is done or cancelled.
${ENVIRONMENT_HELP}`;
  }
}

@SubCommand({
  description: "List the current Requirement's timers (IDs, descriptions, status, next occurrence)",
  name: 'show',
})
export class TimerShowCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.operations.listTimers());
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli timer show
${ENVIRONMENT_HELP}`;
  }
}

@SubCommand({ description: 'Cancel an active timer of the current Requirement', name: 'cancel' })
export class TimerCancelCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: { id?: string }): Promise<void> {
    if (!flags.id) {
      throw new UsageError('--id is required');
    }
    printJson(await this.operations.cancelTimer(flags.id));
  }

  @Option({ description: 'The timer (tmr_…), as `timer show` or `timer register` printed it', flags: '--id <timerId>' })
  parseId(value: string): string {
    return value;
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli timer cancel --id tmr_…
${ENVIRONMENT_HELP}`;
  }
}

@Command({
  description: "Timers that wake the current Requirement's agent later: register, show, cancel",
  name: 'timer',
  subCommands: [TimerRegisterCommand, TimerShowCommand, TimerCancelCommand],
})
export class TimerCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('choose one: timer register | show | cancel (see --help)');
  }
}
