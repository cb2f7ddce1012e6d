import { LIMITS } from '@libs/contracts';

import { invalid } from '../core/errors/domain-error';

/**
 * Decodes and checks the `X-File-Name` header. The name is only ever shown and offered on
 * download (files are stored under their attachment ID), yet a name that tries path tricks or
 * smuggles control characters is refused outright rather than silently rewritten.
 */
export function parseFileName(header: string | string[] | undefined): string {
  if (typeof header !== 'string' || header.trim() === '') {
    throw invalid('file_name_required', 'X-File-Name header is required (URI-encoded file name)');
  }
  let name: string;
  try {
    name = decodeURIComponent(header).normalize('NFC').trim();
  } catch {
    throw invalid('invalid_file_name', 'X-File-Name is not valid URI encoding');
  }

  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(name)) {
    throw invalid('invalid_file_name', 'X-File-Name must not contain control or bidirectional-override characters');
  }
  if (/[/\\]/.test(name) || name === '.' || name === '..') {
    throw invalid('invalid_file_name', 'X-File-Name must be a plain file name, not a path');
  }
  if (name.length === 0 || name.length > LIMITS.fileNameLength) {
    throw invalid('invalid_file_name', `X-File-Name must be 1 to ${LIMITS.fileNameLength} characters`);
  }
  return name;
}
