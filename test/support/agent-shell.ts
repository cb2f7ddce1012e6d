// Shell commands a scripted agent runs (a model stub `shell` turn) to reach the agent API the way
// a misbehaving agent would: raw HTTP with its own run credential, bypassing code-factory-cli and
// the MCP tools' schemas. The run's environment (CODE_FACTORY_API_URL, _SESSION_ID, _TOKEN) fills in
// the rest, so the command works in whichever run it is given to.

/** A shell command that POSTs `body` to the agent API path with the run's credential and prints `status=<code> <answer>`. */
export function agentApiCall(apiPath: string, body: Record<string, unknown>): string {
  const script = [
    `const body = ${JSON.stringify(body)};`,
    'body.sourceSessionId = process.env.CODE_FACTORY_SESSION_ID;',
    `fetch(process.env.CODE_FACTORY_API_URL + ${JSON.stringify(apiPath)}, {`,
    '  method: "POST",',
    '  headers: { authorization: "Bearer " + process.env.CODE_FACTORY_TOKEN, "content-type": "application/json" },',
    '  body: JSON.stringify(body),',
    '}).then(async (r) => console.log("status=" + r.status + " " + (await r.text())));',
  ].join(' ');
  // Single-quoted for the shell; the script itself uses double quotes only.
  return `node -e '${script.replace(/'/g, `'\\''`)}'`;
}

/** `agentApiCall` for a proposal: a child of the run's own Requirement. */
export function proposeOverHttp(body: Record<string, unknown>): string {
  return agentApiCall('/agent/requirements', body);
}
