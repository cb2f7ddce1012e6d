import type { I18n } from '../core/i18n';
import { en, zh } from '../core/i18n-messages';
import { sourceText, systemText } from './system-text';

/** The parts of I18n the texts use, over one dictionary (the real one needs a browser). */
function i18nIn(language: 'en' | 'zh-CN'): I18n {
  const dictionary: Record<string, string> = language === 'en' ? en : zh;
  const t = (key: string, params: Record<string, string | number> = {}) =>
    Object.entries(params).reduce(
      (text, [name, value]) => text.replace(`{${name}}`, String(value)),
      dictionary[key] ?? key,
    );
  return { interval: (s: number) => `${s} s`, language: () => language, locale: () => language, t } as unknown as I18n;
}

describe(systemText.name, () => {
  it("writes the manager's own messages in the reader's language, from their code and arguments", () => {
    const budget = {
      args: { below: 0, costUsd: null, maxCostUsd: null, maxTokens: 1000, runStopped: true, tokens: 1200 },
      code: 'budget.reached',
    } as const;
    expect(systemText(budget, i18nIn('zh-CN'))).toBe(
      '已达到预算：1,200 / 1,000 Token。\n运行已停止；其输入未被消费，等待下一次运行。在有人提高其预算或开始它之前，不会再唤醒此需求。',
    );
    expect(systemText(budget, i18nIn('en'))).toMatch(/^Budget reached: 1,200 of 1,000 tokens\.\nThe run was stopped/);
    expect(
      systemText(
        { args: { merged: null, requirementId: 'req_1', title: 'Schema' }, code: 'dependency.met' },
        i18nIn('zh-CN'),
      ),
    ).toBe('依赖已满足：「Schema」已确认完成。');
    expect(systemText({ args: {}, code: 'run.manager_stopped' }, i18nIn('zh-CN'))).toContain(
      'Agent Manager 在本次运行期间停止了；其输入仍待处理',
    );
    expect(
      systemText(
        {
          args: { check: 'lint', headSha: 'abc', outcome: 'TIMED_OUT', pullRequest: 'o/r#4' },
          code: 'github.ci_failed',
        },
        i18nIn('zh-CN'),
      ),
    ).toBe('GitHub CI：o/r#4 在头提交 abc 上的「lint」超时。');
  });

  it("names the base, its commit and the conflicting files of a land's messages", () => {
    const args = { base: '0123456789ab', baseRef: 'main', count: 2, paths: 'a.txt, b/c.txt' };
    expect(systemText({ args, code: 'landing.conflict' }, i18nIn('en'))).toBe(
      'main moved to 0123456789ab, and this work no longer merges onto it cleanly. Conflicting files (2): a.txt, b/c.txt. Its agent is asked to rebase and resolve them.',
    );
    expect(systemText({ args, code: 'landing.rebase_requested' }, i18nIn('zh-CN'))).toBe(
      '合并队列：这项工作下一个合入，但它与 main 在 0123456789ab 处冲突。冲突文件（2）：a.txt, b/c.txt。已请其智能体变基；一旦能干净合入，队列就会合入它。',
    );
    expect(sourceText({ source: 'landing', triggerId: 'landing.rebase-request' }, i18nIn('en'))).toBe('Merge queue');
    expect(sourceText({ source: 'landing', triggerId: 'landing.base-conflict' }, i18nIn('zh-CN'))).toBe(
      '合入 · 基线已移动',
    );
  });

  it("says where a moved Requirement came from and went, its lost run and its branch (team mode's move)", () => {
    const args = {
      branch: 'agent/x-1',
      commit: '0123456789ab',
      fromHost: 'ada-laptop',
      fromPerson: 'Ada',
      orphanedRunId: 'run_1',
      reason: null,
      toHost: 'bob-pc',
      toPerson: 'Bob',
    };
    expect(systemText({ args, code: 'requirement.moved' }, i18nIn('en'))).toBe(
      'Moved from Ada’s runner (ada-laptop) to Bob’s runner (bob-pc). The run run_1 was lost with its runner; nothing it was given was consumed, so it is delivered again here. ' +
        'Its branch agent/x-1 continues from 0123456789ab, as last pushed to origin; work the old runner did not push stays on that machine. ' +
        'The agent’s CLI session stays on the old machine, so this continues as a new session given the conversation so far.',
    );
    const unfetched = {
      ...args,
      commit: null,
      fromHost: null,
      fromPerson: null,
      orphanedRunId: null,
      reason: 'no origin',
    };
    const zh = systemText({ args: unfetched, code: 'requirement.moved' }, i18nIn('zh-CN'));
    expect(zh).toContain('已从一个已不在看板上的运行器移到Bob 的运行器（bob-pc）');
    expect(zh).toContain('其分支 agent/x-1 无法获取（no origin）');
    expect(zh).not.toContain('运行 run_1');
  });

  it('leaves people’s messages, old messages and codes it does not know to their body', () => {
    expect(systemText({ args: null, code: null }, i18nIn('zh-CN'))).toBeNull();
    expect(systemText({ args: {}, code: 'some.future_code' as never }, i18nIn('zh-CN'))).toBeNull();
  });
});

describe(sourceText.name, () => {
  it('names where a message came from in words, never the internal trigger id', () => {
    expect(sourceText({ source: 'dependency', triggerId: 'requirement.dependency' }, i18nIn('zh-CN'))).toBe('依赖');
    expect(sourceText({ source: 'dependency', triggerId: 'requirement.dependency' }, i18nIn('en'))).toBe(
      'a dependency',
    );
    expect(sourceText({ source: 'github', triggerId: 'github.pull-request.ci-failure' }, i18nIn('en'))).toBe(
      'GitHub · CI',
    );
    expect(sourceText({ source: 'elsewhere', triggerId: 'elsewhere.hook' }, i18nIn('en'))).toBe('elsewhere');
  });
});
