// Services throw these; they carry no HTTP knowledge, so the CLI and schedulers can reuse the
// services. The one exception filter maps `kind` to a status code.

export type DomainErrorKind =
  | 'invalid'
  | 'not_found'
  | 'conflict'
  | 'forbidden'
  | 'unauthorized'
  | 'insufficient_storage'
  | 'too_many_requests'
  | 'unavailable';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    /** Stable machine-readable code, e.g. `requirement_not_found`. */
    readonly code: string,
    message: string,
    /** What the refusal is about, one item each (the files of a conflict), for a program to read. */
    readonly details?: string[],
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (code: string, message: string) => new DomainError('invalid', code, message);
export const notFound = (code: string, message: string) => new DomainError('not_found', code, message);
export const conflict = (code: string, message: string, details?: string[]) =>
  new DomainError('conflict', code, message, details);
export const forbidden = (code: string, message: string) => new DomainError('forbidden', code, message);
export const unauthorized = (code: string, message: string) => new DomainError('unauthorized', code, message);
export const insufficientStorage = (code: string, message: string) =>
  new DomainError('insufficient_storage', code, message);
/** A bounded resource is in use (concurrent unauthenticated bodies): try again shortly. */
export const tooManyRequests = (code: string, message: string) => new DomainError('too_many_requests', code, message);
/** Something the answer depends on cannot be asked now (git failing on the workspace): never guessed, try again. */
export const unavailable = (code: string, message: string) => new DomainError('unavailable', code, message);
