/**
 * A problem with how the program was called or where (a missing variable, a bad argument): the CLIs
 * print it as one line with exit code 1, an MCP tool returns it as its error. Here rather than in
 * cli/ because the manager serves the run's tools too (`/api/agent/mcp`).
 */
export class UsageError extends Error {}
