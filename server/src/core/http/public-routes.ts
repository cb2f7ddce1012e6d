/**
 * Routes anyone may call without credentials: the authentication middleware lets them through and
 * the OpenAPI document marks them so. Here in core, beside the document, so neither imports the other.
 * The GitHub webhook proves itself with its signature, GitLab's with its secret token (each checked
 * by its service, off by default).
 */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set([
  'GET /api/health',
  'HEAD /api/health',
  'POST /api/github/webhook',
  'POST /api/gitlab/webhook',
]);
