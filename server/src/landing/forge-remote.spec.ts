import { parseRemoteUrl } from './forge-remote';

describe('parseRemoteUrl', () => {
  it.each([
    [
      'https://github.com/acme/widgets.git',
      {
        host: 'github.com',
        owner: 'acme',
        repo: 'widgets',
        scheme: 'https',
        url: 'https://github.com/acme/widgets.git',
      },
    ],
    ['https://github.com/acme/widgets', { host: 'github.com', owner: 'acme', repo: 'widgets', scheme: 'https' }],
    ['https://github.com/acme/widgets.git/', { host: 'github.com', owner: 'acme', repo: 'widgets', scheme: 'https' }],
    ['HTTPS://GitHub.com/Acme/Widgets.GIT', { host: 'github.com', owner: 'Acme', repo: 'Widgets', scheme: 'https' }],
    ['http://ghe.corp:8080/team/tool.git', { host: 'ghe.corp:8080', owner: 'team', repo: 'tool', scheme: 'http' }],
    [
      'git@github.com:acme/widgets.git',
      { host: 'github.com', owner: 'acme', repo: 'widgets', scheme: 'ssh', url: 'git@github.com:acme/widgets.git' },
    ],
    ['github.com:acme/widgets', { host: 'github.com', owner: 'acme', repo: 'widgets', scheme: 'ssh' }],
    ['ssh://git@github.com/acme/widgets.git', { host: 'github.com', owner: 'acme', repo: 'widgets', scheme: 'ssh' }],
    [
      'ssh://git@ghe.corp:2222/team/my.tool.git',
      { host: 'ghe.corp:2222', owner: 'team', repo: 'my.tool', scheme: 'ssh' },
    ],
  ])('reads %s', (url, expected) => {
    expect(parseRemoteUrl(url)).toMatchObject(expected);
  });

  it('keeps no credentials in the URL it shows', () => {
    expect(parseRemoteUrl('https://x-access-token:ghp_secret@github.com/acme/widgets.git')).toEqual({
      host: 'github.com',
      owner: 'acme',
      repo: 'widgets',
      scheme: 'https',
      url: 'https://github.com/acme/widgets.git',
    });
    expect(parseRemoteUrl('https://someone@github.com/acme/widgets.git')?.url).toBe(
      'https://github.com/acme/widgets.git',
    );
  });

  it.each([
    '/srv/git/widgets.git',
    'file:///srv/git/widgets.git',
    '../widgets',
    'https://github.com/acme',
    'https://github.com/acme/widgets/tree/main',
    'git@github.com:acme',
    'ext::sh -c touch% /tmp/pwned',
    'https://github.com/acme/wid gets.git',
    '',
  ])('refuses %j', (url) => {
    expect(parseRemoteUrl(url)).toBeNull();
  });
});

describe('parseRemoteUrl with GitLab subgroups (nested)', () => {
  it.each([
    ['https://gitlab.com/group/sub/project.git', { host: 'gitlab.com', owner: 'group/sub', repo: 'project' }],
    ['git@gitlab.com:group/project.git', { host: 'gitlab.com', owner: 'group', repo: 'project', scheme: 'ssh' }],
    ['ssh://git@gitlab.corp:2222/a/b/c/d.git', { host: 'gitlab.corp:2222', owner: 'a/b/c', repo: 'd' }],
  ])('reads %s', (url, expected) => {
    expect(parseRemoteUrl(url, true)).toMatchObject(expected);
  });

  it('is refused without nesting (GitHub has owner/name only), and past 20 groups', () => {
    expect(parseRemoteUrl('https://gitlab.com/group/sub/project.git')).toBeNull();
    expect(parseRemoteUrl(`https://gitlab.com/${'g/'.repeat(21)}project.git`, true)).toBeNull();
    expect(parseRemoteUrl('https://gitlab.com/group/../project.git', true)).toBeNull();
  });
});
