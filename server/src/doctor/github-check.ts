import { resolveGitHubToken } from '../github/github-token';
import { DoctorCheck } from './doctor-report';

// The GitHub token: none, rejected, short of scopes, or fine. Not required: a manager runs without GitHub.

export async function checkGitHub(apiUrl: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const base = { id: 'github' as const, required: false, title: 'GitHub token' };
  const fixToken =
    'set GITHUB_TOKEN (or GH_TOKEN), or log in with `gh auth login`; pull requests are not followed without one';
  const found = await resolveGitHubToken({ env, timeoutMs });
  if (found === null) {
    return {
      ...base,
      args: {},
      code: 'github.no_token',
      detail: 'no token in GITHUB_TOKEN, GH_TOKEN or `gh auth token`',
      fix: fixToken,
      status: 'warn',
    };
  }
  const url = `${apiUrl.replace(/\/+$/, '')}/user`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${found.token}`,
        'user-agent': 'agent-manager-doctor',
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
    return {
      ...base,
      args: { error: cause, source: found.source, url },
      code: 'github.unreachable',
      detail: `token from ${found.source}; ${url} could not be reached (${cause})`,
      fix: 'check the network, or githubApiUrl in the configuration',
      status: 'warn',
    };
  }
  if (response.status === 401) {
    return {
      ...base,
      args: { source: found.source, url: apiUrl },
      code: 'github.rejected',
      detail: `the token from ${found.source} is rejected by ${apiUrl} (401)`,
      fix: `renew it; ${fixToken}`,
      status: 'fail',
    };
  }
  if (!response.ok) {
    return {
      ...base,
      args: { source: found.source, status: response.status, url },
      code: 'github.bad_answer',
      detail: `token from ${found.source}; GET ${url} answered ${response.status}`,
      fix: 'check githubApiUrl in the configuration',
      status: 'warn',
    };
  }
  const login = ((await response.json().catch(() => ({}))) as { login?: string }).login ?? 'unknown user';
  const header = response.headers.get('x-oauth-scopes');
  if (header === null) {
    // Fine-grained tokens and GitHub App tokens carry their permissions per repository instead.
    return {
      ...base,
      args: { login, source: found.source },
      code: 'github.fine_grained',
      detail: `token from ${found.source} (${login}); fine-grained (no OAuth scopes to list)`,
      fix: null,
      status: 'ok',
    };
  }
  const scopes = header
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!scopes.includes('repo') && !scopes.includes('public_repo')) {
    return {
      ...base,
      args: { login, scopes: scopes.join(', '), source: found.source },
      code: 'github.missing_scope',
      detail: `token from ${found.source} (${login}); scopes: ${scopes.join(', ') || 'none'}`,
      fix: 'give the token the `repo` scope (or `public_repo` for public repositories only) to read pull requests',
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { login, scopes: scopes.join(', '), source: found.source },
    code: 'github.ok',
    detail: `token from ${found.source} (${login}); scopes: ${scopes.join(', ')}`,
    fix: null,
    status: 'ok',
  };
}
