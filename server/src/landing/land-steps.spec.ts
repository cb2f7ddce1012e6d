import type { MessagesService } from '../messages/messages.service';
import { agentSummary, refuseMessage } from './land-steps';

const saying = (body: string) => ({ latestOf: () => Promise.resolve({ body }) }) as unknown as MessagesService;

describe('what a land writes of the conversation', () => {
  it("takes the agent's last words as plain text: no colour codes, no control characters, \\n line ends", async () => {
    const summary = await agentSummary(saying('\u001b[32mDone\u001b[0m: tests pass\r\nnext\u0007 line\r'), 'req_1');
    expect(summary).toBe('Done: tests pass\nnext line');
    // What the land menu sends back as it was offered passes the message check.
    expect(() => refuseMessage('squash', `Title\n\n${summary}`)).not.toThrow();
  });

  it('cuts a long summary, and says nothing when the agent said nothing', async () => {
    expect(await agentSummary(saying('x'.repeat(5000)), 'req_1')).toHaveLength(4001);
    expect(await agentSummary({ latestOf: () => Promise.resolve(null) } as unknown as MessagesService, 'req_1')).toBe(
      '',
    );
  });

  it('takes a message only for merge and squash, and only one that says something', () => {
    expect(() => refuseMessage('rebase', 'x')).toThrow(/rebase keeps each commit/);
    expect(() => refuseMessage('pull_request', 'x')).toThrow(/pull request/);
    expect(() => refuseMessage('merge', ' \n\t')).toThrow(/empty/);
    expect(() => refuseMessage('merge', undefined)).not.toThrow();
  });
});
