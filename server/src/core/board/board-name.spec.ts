import { boardNameFromOrigin, boardSchema, runnerIdOf } from './board-name';

describe('board names', () => {
  it('gives every clone of one repository the same board, however it was cloned', () => {
    const names = [
      'git@github.com:Acme/App.git',
      'https://github.com/acme/app',
      'https://x-access-token:secret@github.com/Acme/App.git/',
      'ssh://git@github.com:22/acme/app.git',
      'ssh://git@GitHub.com/acme/app',
    ].map(boardNameFromOrigin);
    expect(new Set(names)).toEqual(new Set(['github.com/acme/app']));
  });

  it('names a board after a path origin without its credentials or .git, and never after the token', () => {
    expect(boardNameFromOrigin('/srv/git/App.git')).toBe('srv/git/app');
    expect(boardNameFromOrigin('file:///srv/git/app.git')).toBe('srv/git/app');
    expect(boardNameFromOrigin('https://tok3n@example.com/a/b')).not.toContain('tok3n');
    expect(() => boardNameFromOrigin('')).toThrow(/cannot name a board/);
  });

  it('puts each board in a schema of its own and each clone on a runner of its own', () => {
    expect(boardSchema('github.com/acme/app')).toMatch(/^am_board_[0-9a-f]{16}$/);
    expect(boardSchema('github.com/acme/app')).not.toBe(boardSchema('github.com/acme/other'));
    expect(runnerIdOf('0123456789abcdef', 'laptop')).toBe(runnerIdOf('0123456789abcdef', 'laptop'));
    expect(runnerIdOf('0123456789abcdef', 'laptop')).not.toBe(runnerIdOf('0123456789abcdef', 'desktop'));
    expect(runnerIdOf('0123456789abcdef', 'laptop')).not.toBe(runnerIdOf('fedcba9876543210', 'laptop'));
  });
});
