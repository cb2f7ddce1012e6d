import { formatDoctorReport } from './doctor-report';
import { MINIMUM_NODE_VERSION, checkNode } from './runtime-checks';

describe('doctor: the Node.js check', () => {
  it.each([
    ['v20.19.1', 'ok'],
    ['v20.20.2', 'ok'],
    ['v22.13.0', 'ok'],
    ['v24.0.0', 'ok'],
    ['v26.12.1', 'ok'],
    ['v20.19.0', 'fail'],
    ['v20.18.3', 'fail'],
    ['v21.7.3', 'fail'],
    ['v22.12.0', 'fail'],
    ['v18.20.0', 'fail'],
  ])('%s is %s', (version, status) => {
    const check = checkNode(version);
    expect(check).toMatchObject({ required: true, status });
    expect(check.fix === null).toBe(status === 'ok');
    if (status === 'fail') {
      expect(check.fix).toContain(MINIMUM_NODE_VERSION);
    }
  });

  it('prints a failed required check with its fix and the count', () => {
    const text = formatDoctorReport({ checks: [checkNode('v18.0.0')], ok: false });
    expect(text).toContain('✗ Node.js');
    expect(text).toContain(`→ install a maintained Node.js LTS, 24 or 26 (or ${MINIMUM_NODE_VERSION}+`);
    expect(text).toContain('1 required check failed.');
  });
});
