import {
  RawPullRequestSummary,
  RawSummaryRollup,
  buildPullRequestSummariesQuery,
  parsePullRequestSummariesResponse,
  summaryFingerprint,
} from './pull-request-summary';

describe('pull-request-summary', () => {
  const refs = [
    { number: 1, repository: 'acme/widgets' },
    { number: 2, repository: 'Other/repo.js' },
  ];

  const raw = (patch: Partial<RawPullRequestSummary> = {}): RawPullRequestSummary => ({
    comments: { totalCount: 2 },
    commits: {
      nodes: [
        {
          commit: {
            oid: 'a'.repeat(40),
            statusCheckRollup: {
              contexts: {
                checkRunCountsByState: [
                  { count: 1, state: 'SUCCESS' },
                  { count: 1, state: 'IN_PROGRESS' },
                ],
                statusContextCountsByState: [{ count: 1, state: 'PENDING' }],
                totalCount: 3,
              },
              state: 'PENDING',
            },
          },
        },
      ],
    },
    headRefOid: 'a'.repeat(40),
    isDraft: false,
    mergeable: 'MERGEABLE',
    merged: false,
    number: 1,
    repository: { nameWithOwner: 'Acme/Widgets' },
    reviewThreads: { totalCount: 1 },
    reviews: { totalCount: 0 },
    state: 'OPEN',
    updatedAt: '2026-11-30T02:00:00Z',
    ...patch,
  });
  const withContexts = (contexts: Partial<RawSummaryRollup['contexts']>) => {
    const base = raw();
    const rollup = base.commits.nodes[0]!.commit.statusCheckRollup!;
    return raw({
      commits: {
        nodes: [
          {
            commit: {
              oid: 'a'.repeat(40),
              statusCheckRollup: { ...rollup, contexts: { ...rollup.contexts, ...contexts } },
            },
          },
        ],
      },
    });
  };

  it('asks for scalars and counts only, per aliased PR, with the refs as variables', () => {
    const { query, variables } = buildPullRequestSummariesQuery(refs);

    expect(variables).toEqual({ n0: 'widgets', n1: 'repo.js', o0: 'acme', o1: 'Other', p0: 1, p1: 2 });
    expect(query).toContain(
      'query PullRequestSummaries($o0: String!, $n0: String!, $p0: Int!, $o1: String!, $n1: String!, $p1: Int!)',
    );
    expect(query).toContain(
      'pr1: repository(owner: $o1, name: $n1) { pullRequest(number: $p1) { ...PullRequestSummaryFields } }',
    );
    expect(query).toContain('rateLimit { cost limit remaining resetAt }');
    expect(query).toContain('checkRunCountsByState { state count } statusContextCountsByState { state count }');
    expect(query).not.toContain('widgets');
    // No list of items anywhere: every connection is first: 0, except the head commit (last: 1).
    expect(query).not.toMatch(/nodes \{ (id|databaseId|author|body)/);
    expect([...query.matchAll(/\((first|last): (\d+)/g)].map((m) => `${m[1]}:${m[2]}`)).toEqual([
      'first:0',
      'first:0',
      'first:0',
      'last:1',
      'first:0',
    ]);
  });

  it('maps a summary and attributes errors by alias, as for snapshots', () => {
    const results = parsePullRequestSummariesResponse(
      refs,
      { pr0: { pullRequest: raw({ isDraft: true }) }, pr1: null },
      [{ message: 'gone', path: ['pr1'], type: 'NOT_FOUND' }],
    );

    expect(results[0]).toEqual({
      fingerprint: expect.stringMatching(/^v1\|/),
      headSha: 'a'.repeat(40),
      isDraft: true,
      kind: 'summary',
      mergeable: 'MERGEABLE',
      number: 1,
      ref: refs[0],
      repository: 'Acme/Widgets',
      state: 'open',
      status: 'draft',
      updatedAt: '2026-11-30T02:00:00Z',
    });
    expect(results[1]).toEqual({ code: 'not_found', kind: 'error', message: 'gone', ref: refs[1] });
    expect(
      parsePullRequestSummariesResponse(refs, null, [{ message: 'Something went wrong' }]).map(
        (r) => r.kind === 'error' && r.code,
      ),
    ).toEqual(['failed', 'failed']);
  });

  it('spells every change-relevant field in the fingerprint', () => {
    expect(summaryFingerprint(raw())).toBe(
      `v1|state:OPEN|draft:ready|merged:no|head:${'a'.repeat(40)}|mergeable:MERGEABLE|updated:2026-11-30T02:00:00Z` +
        `|comments:2|reviews:0|threads:1|commit:${'a'.repeat(40)}|checks:PENDING/3|runs:IN_PROGRESS=1,SUCCESS=1|statuses:PENDING=1`,
    );
    expect(summaryFingerprint(raw({ commits: { nodes: [] } }))).toMatch(/\|commit:-\|checks:none\|runs:-\|statuses:-$/);
    expect(summaryFingerprint(raw({ merged: true, state: 'MERGED' }))).toContain(
      '|state:MERGED|draft:ready|merged:yes|',
    );
  });

  it.each<[string, RawPullRequestSummary]>([
    ['state', raw({ state: 'CLOSED' })],
    ['draft', raw({ isDraft: true })],
    ['merged', raw({ merged: true })],
    ['head', raw({ headRefOid: 'b'.repeat(40) })],
    ['mergeable', raw({ mergeable: 'CONFLICTING' })],
    ['updatedAt', raw({ updatedAt: '2026-11-30T02:00:01Z' })],
    ['comments', raw({ comments: { totalCount: 3 } })],
    ['reviews', raw({ reviews: { totalCount: 1 } })],
    ['threads', raw({ reviewThreads: { totalCount: 2 } })],
    ['a check run changing state', withContexts({ checkRunCountsByState: [{ count: 2, state: 'SUCCESS' }] })],
    [
      'a check run concluding otherwise',
      withContexts({
        checkRunCountsByState: [
          { count: 1, state: 'SUCCESS' },
          { count: 1, state: 'FAILURE' },
        ],
      }),
    ],
    ['a status changing state', withContexts({ statusContextCountsByState: [{ count: 1, state: 'SUCCESS' }] })],
    ['a context added', withContexts({ totalCount: 4 })],
  ])('changes with %s', (_change, changed) => {
    expect(summaryFingerprint(changed)).not.toBe(summaryFingerprint(raw()));
  });

  it('ignores the order of counts, zero counts and the repository spelling', () => {
    const reordered = withContexts({
      checkRunCountsByState: [
        { count: 0, state: 'QUEUED' },
        { count: 1, state: 'IN_PROGRESS' },
        { count: 0, state: 'FAILURE' },
        { count: 1, state: 'SUCCESS' },
      ],
      statusContextCountsByState: [
        { count: 0, state: 'ERROR' },
        { count: 1, state: 'PENDING' },
      ],
    });

    expect(summaryFingerprint(reordered)).toBe(summaryFingerprint(raw()));
    expect(summaryFingerprint(raw({ repository: { nameWithOwner: 'acme/widgets' } }))).toBe(summaryFingerprint(raw()));
  });
});
