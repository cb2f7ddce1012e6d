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
  return sorted[index]!;
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

export function writeResults(results: ScenarioResult[]): string {
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'latest.json');
  fs.writeFileSync(file, `${JSON.stringify({ node: process.version, results, when: new Date().toISOString() }, null, 2)}\n`);
  return file;
}

export function table(results: ScenarioResult[]): string {
  const rows = ['| scenario | figure | value | target | result |', '| --- | --- | --- | --- | --- |'];
  for (const result of results) {
    for (const figure of result.figures) {
      const ok = passes(figure);
      const target = figure.target ? `${figure.target.op} ${figure.target.value} ${figure.unit}` : '';
      rows.push(`| ${result.scenario} | ${figure.name} | ${figure.value} ${figure.unit} | ${target} | ${ok === null ? '' : ok ? 'pass' : 'FAIL'} |`);
    }
  }
  return rows.join('\n');
}
