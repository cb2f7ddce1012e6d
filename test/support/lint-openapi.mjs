// Lints an OpenAPI document (JSON on stdin) with Redocly's `recommended` ruleset and prints the
// problems as JSON. A separate process because @redocly/openapi-core ships only ES modules, which
// Jest's module loader cannot load without --experimental-vm-modules.
import { createConfig, lintFromString } from '@redocly/openapi-core';

const chunks = [];
for await (const chunk of process.stdin) {
  chunks.push(chunk);
}
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({
  absoluteRef: 'openapi.json',
  config,
  source: Buffer.concat(chunks).toString('utf8'),
});
process.stdout.write(
  JSON.stringify(
    problems.map((p) => ({
      message: p.message,
      pointer: p.location?.[0]?.pointer ?? null,
      ruleId: p.ruleId,
      severity: p.severity,
    })),
  ),
);
