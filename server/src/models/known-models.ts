import { type CatalogModel, REASONING_EFFORTS, type ReasoningEffort } from '@libs/contracts';

/**
 * Claude Code's model aliases (2.1.332: the `ume` list in its bundle, which `--model` resolves
 * itself to the newest model of a family). Always offered: they need no listing.
 */
export const CLAUDE_CODE_ALIASES: readonly { id: string; label: string }[] = [
  { id: 'sonnet', label: 'Sonnet (latest)' },
  { id: 'opus', label: 'Opus (latest)' },
  { id: 'haiku', label: 'Haiku (latest)' },
  { id: 'fable', label: 'Fable (latest)' },
  { id: 'best', label: 'Best available' },
  { id: 'sonnet[1m]', label: 'Sonnet, 1M context' },
  { id: 'opus[1m]', label: 'Opus, 1M context' },
  { id: 'fable[1m]', label: 'Fable, 1M context' },
  { id: 'opusplan', label: 'Opus in plan mode, else Sonnet' },
];

/** What `claude --effort` takes (2.1.332 `--help`: low, medium, high, xhigh, max), for every model. */
export const CLAUDE_CODE_EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'xhigh', 'max'];

/**
 * Served for Codex until its own listing has answered once: the visible models of the Codex
 * release this manager was tested with (0.171.0's bundled catalog), flagged `builtin` and stale.
 */
export const CODEX_BUILTIN_MODELS: readonly { id: string; label: string }[] = [
  { id: 'gpt-6.2-sol', label: 'GPT-6.2-Sol' },
  { id: 'gpt-6.2-astra', label: 'GPT-6.2-Astra' },
  { id: 'gpt-6.1-terra', label: 'GPT-6.1 Terra' },
  { id: 'gpt-6.1-sol', label: 'GPT-6.1-Sol' },
  { id: 'gpt-6-astra', label: 'GPT-6-Astra' },
];

/**
 * The efforts of a listing the manager can pass on: a Requirement's `reasoningEffort` is one of
 * REASONING_EFFORTS, so an effort a CLI knows beyond them (Codex's `ultra`, `minimal`) is left out
 * rather than offered and then refused.
 */
export function acceptedEfforts(efforts: readonly string[]): ReasoningEffort[] {
  return REASONING_EFFORTS.filter((effort) => efforts.includes(effort));
}

export function claudeAliasModels(): CatalogModel[] {
  return CLAUDE_CODE_ALIASES.map(({ id, label }) => ({
    efforts: [...CLAUDE_CODE_EFFORTS],
    id,
    label,
    provider: 'claude-code',
    source: 'claude_code_alias',
  }));
}

export function codexBuiltinModels(): CatalogModel[] {
  // 0.171.0's bundled catalog lists low…max (and `ultra`, which a Requirement cannot carry) for each.
  return CODEX_BUILTIN_MODELS.map(({ id, label }) => ({
    efforts: ['low', 'medium', 'high', 'xhigh', 'max'],
    id,
    label,
    provider: 'codex',
    source: 'builtin',
  }));
}
