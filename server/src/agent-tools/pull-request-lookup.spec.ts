import { parsePullRequestUrl } from './pull-request-lookup';

describe('parsePullRequestUrl', () => {
  it.each([
    ['https://github.com/org/repo/pull/184', { forge: 'github', number: 184, repository: 'org/repo' }],
    ['https://ghe.corp/org/repo/pull/7/files?w=1', { forge: 'github', number: 7, repository: 'org/repo' }],
    [
      'https://gitlab.com/group/project/-/merge_requests/12',
      { forge: 'gitlab', number: 12, repository: 'group/project' },
    ],
    [
      'https://gitlab.corp/a/b/c/-/merge_requests/3/diffs#note_9',
      { forge: 'gitlab', number: 3, repository: 'a/b/c', url: 'https://gitlab.corp/a/b/c/-/merge_requests/3/diffs' },
    ],
  ])('reads %s', (url, expected) => {
    expect(parsePullRequestUrl(url)).toMatchObject(expected);
  });

  it.each([
    'https://gitlab.com/group/project/merge_requests/12',
    'https://gitlab.com/group/project/-/issues/12',
    'https://github.com/org/repo/issues/1',
    'https://gitlab.com/-/merge_requests/1',
  ])('refuses %s, naming both shapes', (url) => {
    expect(() => parsePullRequestUrl(url)).toThrow(/pull request address like .* or a merge request address like/);
  });
});
