import { classify, detectImage } from './file-signature';

describe('file signatures', () => {
  it.each([
    [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0], 'image/png'],
    [[0xff, 0xd8, 0xff, 0xdb], 'image/jpeg'],
    [[...Buffer.from('GIF87a')], 'image/gif'],
    [[...Buffer.from('RIFF'), 1, 2, 3, 4, ...Buffer.from('WEBP')], 'image/webp'],
  ])('recognises %j as %s', (bytes, type) => {
    expect(detectImage(Buffer.from(bytes))).toBe(type);
  });

  it.each([
    [[0x89, 0x50, 0x4e]],
    [[...Buffer.from('RIFF'), 1, 2, 3, 4, ...Buffer.from('WAVE')]],
    [[...Buffer.from('GIF88a')]],
    [[]],
  ])('does not take %j for an image', (bytes) => {
    expect(detectImage(Buffer.from(bytes))).toBeNull();
  });

  it('keeps a well-formed declared type for files but never a declared image type', () => {
    expect(classify(Buffer.from('%PDF-1.7'), 'application/pdf; charset=binary')).toEqual({
      kind: 'file',
      mediaType: 'application/pdf',
    });
    expect(classify(Buffer.from('text'), 'image/png')).toEqual({ kind: 'file', mediaType: 'application/octet-stream' });
    expect(classify(Buffer.from('text'), 'text/html\r\nX-Evil: 1')).toEqual({
      kind: 'file',
      mediaType: 'application/octet-stream',
    });
    expect(classify(Buffer.from('text'), undefined)).toEqual({ kind: 'file', mediaType: 'application/octet-stream' });
  });
});
