import { z } from 'zod';

import { ManagerApiError } from '@server/agent-tools/manager-api';
import { ownerTools, OWNER_TOOL_NAMES } from '../owner/owner-tools';
import type { OwnerApi } from '../owner/owner-api';
import { AGENT_TOOL_NAMES, agentTools } from '@server/agent-tools/agent-tools';
import type { AgentOperations } from '@server/agent-tools/agent-operations';
import { callTool, defineTool } from '@server/agent-tools/tool-definition';

describe('MCP tool servers', () => {
  const echo = defineTool({
    description: 'd',
    input: { n: z.number() },
    name: 'echo',
    run: async ({ n }) => ({ twice: n * 2 }),
    title: 't',
  });

  it('answers with the JSON the manager returned', async () => {
    await expect(callTool(echo, { n: 2 })).resolves.toEqual({
      content: [{ text: '{\n  "twice": 4\n}', type: 'text' }],
    });
  });

  it('turns a refusal or any failure into a tool error with its message, never a throw', async () => {
    const refused = defineTool({
      ...echo,
      run: () => Promise.reject(new ManagerApiError('message refused (409 not_related): not related')),
    });
    await expect(callTool(refused, { n: 1 })).resolves.toEqual({
      content: [{ text: 'message refused (409 not_related): not related', type: 'text' }],
      isError: true,
    });
    const broken = defineTool({ ...echo, run: () => Promise.reject(new TypeError('boom')) });
    await expect(callTool(broken, { n: 1 })).resolves.toMatchObject({ content: [{ text: 'boom' }], isError: true });
  });

  it('declares every agent and owner tool the issue names, once', () => {
    expect(agentTools({} as AgentOperations).map((tool) => tool.name)).toEqual([...AGENT_TOOL_NAMES]);
    expect(ownerTools({} as OwnerApi).map((tool) => tool.name)).toEqual([...OWNER_TOOL_NAMES]);
  });

  it("takes the contracts' limits: a timer under a minute or a blank message is refused by the schema", () => {
    const tools = agentTools({} as AgentOperations);
    const timer = z.object(tools.find((tool) => tool.name === 'register_timer')!.input);
    expect(timer.safeParse({ afterSeconds: 59, description: 'x' }).success).toBe(false);
    expect(timer.safeParse({ afterSeconds: 60, description: 'x' }).success).toBe(true);
    const message = z.object(tools.find((tool) => tool.name === 'message_related')!.input);
    expect(message.safeParse({ message: '   ', requirementId: 'req_1' }).success).toBe(false);
  });
});
