import { buildPullRequestsQuery, parsePullRequestsResponse, splitRepository } from './pull-request-query';

describe('pull-request-query', () => {
  const refs = [
    { number: 1, repository: 'acme/widgets' },
    { number: 2, repository: 'Other/repo.js' },
  ];

  it('aliases each PR and passes its owner, name and number as variables, never in the text', () => {
    const { query, variables } = buildPullRequestsQuery(refs);

    expect(variables).toEqual({ n0: 'widgets', n1: 'repo.js', o0: 'acme', o1: 'Other', p0: 1, p1: 2 });
    expect(query).toContain(
      'query PullRequests($o0: String!, $n0: String!, $p0: Int!, $o1: String!, $n1: String!, $p1: Int!)',
    );
    expect(query).toContain(
      'pr1: repository(owner: $o1, name: $n1) { pullRequest(number: $p1) { ...PullRequestFields } }',
    );
    expect(query).toContain('rateLimit { cost limit remaining resetAt }');
    expect(query).not.toContain('widgets');
  });

  it.each(['acme', 'acme/', '/widgets', 'a/b/c', 'acme/wid gets', 'acme/x"){'])(
    'refuses %j as a repository',
    (repository) => {
      expect(splitRepository(repository)).toBeNull();
    },
  );

  it('attributes errors by alias and fails every PR on an error without a path', () => {
    const data = { pr0: null, pr1: { pullRequest: null } };

    expect(
      parsePullRequestsResponse(refs, data, [{ message: 'gone', path: ['pr0'], type: 'NOT_FOUND' }]).map(
        (r) => r.kind === 'error' && r.code,
      ),
    ).toEqual(['not_found', 'not_found']);
    expect(parsePullRequestsResponse(refs, null, [{ message: 'Something went wrong' }])).toEqual([
      { code: 'failed', kind: 'error', message: 'Something went wrong', ref: refs[0] },
      { code: 'failed', kind: 'error', message: 'Something went wrong', ref: refs[1] },
    ]);
  });
});
