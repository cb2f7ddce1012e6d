import type { AttachmentKind } from '@libs/contracts';

/** Bytes needed to recognise every supported image format. */
export const SIGNATURE_BYTES = 12;

const startsWith = (head: Buffer, bytes: number[], offset = 0) =>
  head.length >= offset + bytes.length && bytes.every((b, i) => head[offset + i] === b);

/**
 * The type comes from the file's first bytes, never from its name or the client's
 * Content-Type: only real PNG, JPEG, GIF and WebP files are previewed inline as images.
 */
export function detectImage(head: Buffer): string | null {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) {
    return 'image/png';
  }
  if (startsWith(head, [0xff, 0xd8, 0xff])) {
    return 'image/jpeg';
  }
  if (startsWith(head, [0x47, 0x49, 0x46, 0x38]) && (head[4] === 0x37 || head[4] === 0x39) && head[5] === 0x61) {
    return 'image/gif';
  }
  if (startsWith(head, [0x52, 0x49, 0x46, 0x46]) && startsWith(head, [0x57, 0x45, 0x42, 0x50], 8)) {
    return 'image/webp';
  }
  return null;
}

const IMAGE_EXTENSIONS: Record<string, string> = {
  'image/gif': '.gif',
  'image/jpeg': '.jpg',
  'image/png': '.png',
  'image/webp': '.webp',
};

/**
 * The extension of the stored file: agents (and the CLIs' image handling) go by extension, so
 * an image gets the one its signature says, a file keeps a plain extension from its name.
 */
export function storedExtension(kind: AttachmentKind, mediaType: string, fileName: string): string {
  if (kind === 'image') {
    return IMAGE_EXTENSIONS[mediaType] ?? '';
  }
  const ext = /\.([A-Za-z0-9]{1,10})$/.exec(fileName)?.[1];
  return ext ? `.${ext.toLowerCase()}` : '';
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** Kind and media type to store: images by signature; other files keep a well-formed declared type. */
export function classify(head: Buffer, declaredType: string | undefined): { kind: AttachmentKind; mediaType: string } {
  const image = detectImage(head);
  if (image) {
    return { kind: 'image', mediaType: image };
  }
  const declared = declaredType?.split(';')[0]?.trim().toLowerCase();
  // A declared image/* that failed the signature check is not trusted as an image.
  const mediaType =
    declared && MEDIA_TYPE.test(declared) && !declared.startsWith('image/') ? declared : 'application/octet-stream';
  return { kind: 'file', mediaType };
}
