import type { NewMessage } from '../messages/messages.service';

/**
 * The system message of a run a manager stop cut short, whether the stop was graceful (the run is
 * cancelled on the way down) or not (the next start's reconciliation fails it): one text and one
 * code for both, since for the person the effect is the same (issue 26 §8).
 */
export function managerStoppedMessage(runId: string): NewMessage {
  return {
    args: {},
    author: 'system',
    body: 'Agent Manager stopped during this run; its input is pending. Nothing was consumed: the next start delivers the same input.',
    code: 'run.manager_stopped',
    deliverToRd: false,
    runId,
  };
}
