import * as fs from 'node:fs';
import * as path from 'node:path';

import { ROOT } from '../test/support/manager-process';

/** One measured figure, with its target when it has one. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** `>=` or `<=` the target passes. */
  target?: { op: '>=' | '<='; value: number };
}

export interface ScenarioResult {
  scenario: string;
  figures: Figure[];
  notes?: string[];
}

export function passes(figure: Figure): boolean | null {
  if (!figure.target) {
    return null;
  }
  return figure.target.op === '>=' ? figure.value >= figure.target.value : figure.value <= figure.target.value;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) {
    return NaN;
  }
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

interface StoredResult extends ScenarioResult {
  /** When this scenario was last measured. */
  when: string;
}

/**
 * Merges this run's results into `bench/results/latest.json` (a scenario run alone replaces
 * only its own entry), writes `latest.md`, and puts the table into `docs/performance.md`
 * between its markers. Returns the merged results, in the order of `order`.
 */
export function publishResults(results: ScenarioResult[], order: string[]): StoredResult[] {
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'latest.json');
  let previous: StoredResult[] = [];
  try {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { results: StoredResult[]; when: string };
    previous = stored.results.map((r) => ({ ...r, when: r.when ?? stored.when }));
  } catch {
    // first run, or an older format: start afresh
  }
  const when = new Date().toISOString();
  const merged = new Map(previous.map((r) => [r.scenario, r]));
  for (const result of results) {
    merged.set(result.scenario, { ...result, when });
  }
  const ordered = [...merged.values()].sort((a, b) => rank(order, a.scenario) - rank(order, b.scenario));
  fs.writeFileSync(file, `${JSON.stringify({ node: process.version, results: ordered, when }, null, 2)}\n`);
  const markdown = table(ordered);
  fs.writeFileSync(path.join(dir, 'latest.md'), `${markdown}\n`);
  const docs = path.join(ROOT, 'docs', 'performance.md');
  const text = fs.readFileSync(docs, 'utf8');
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start >= 0 && end > start) {
    const dates = [...new Set(ordered.map((r) => r.when.slice(0, 10)))].sort().join(', ');
    const body = `${TABLE_START}\n_Measured ${dates} on Node ${process.version}; each scenario from one run._\n\n${markdown}\n`;
    fs.writeFileSync(docs, text.slice(0, start) + body + text.slice(end));
  }
  return ordered;
}

const TABLE_START = '<!-- bench:results:start -->';
const TABLE_END = '<!-- bench:results:end -->';

function rank(order: string[], scenario: string): number {
  const index = order.indexOf(scenario);
  return index === -1 ? order.length : index;
}

export function table(results: ScenarioResult[]): string {
  const rows = ['| scenario | figure | value | target | result |', '| --- | --- | --- | --- | --- |'];
  for (const result of results) {
    for (const figure of result.figures) {
      const ok = passes(figure);
      const target = figure.target ? `${figure.target.op} ${figure.target.value} ${figure.unit}` : '';
      rows.push(
        `| ${result.scenario} | ${figure.name} | ${figure.value} ${figure.unit} | ${target} | ${ok === null ? '' : ok ? 'pass' : 'FAIL'} |`,
      );
    }
  }
  return rows.join('\n');
}
