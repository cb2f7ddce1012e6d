import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Response } from 'express';

import { DomainError, DomainErrorKind } from './domain-error';
import { errorBody } from './error-body';

function statusOf(kind: DomainErrorKind): number {
  switch (kind) {
    case 'invalid':
      return HttpStatus.BAD_REQUEST;
    case 'unauthorized':
      return HttpStatus.UNAUTHORIZED;
    case 'forbidden':
      return HttpStatus.FORBIDDEN;
    case 'not_found':
      return HttpStatus.NOT_FOUND;
    case 'conflict':
      return HttpStatus.CONFLICT;
    case 'insufficient_storage':
      return HttpStatus.INSUFFICIENT_STORAGE;
    case 'too_many_requests':
      return HttpStatus.TOO_MANY_REQUESTS;
    case 'unavailable':
      return HttpStatus.SERVICE_UNAVAILABLE;
    default:
      return assertUnreachable(kind);
  }
}

function assertUnreachable(value: never): never {
  throw new Error(`unhandled domain error kind ${String(value)}`);
}

const HTTP_CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'body_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  503: 'unavailable',
};

/**
 * The one place that turns errors into HTTP answers. Domain errors keep their code; Nest's
 * HTTP exceptions (validation, unknown routes) keep their status; anything else is a bug, so
 * it is logged with its stack and answered as a generic 500 that leaks nothing.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpErrors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) {
      // A streamed answer (SSE, download) failed midway: nothing sane can be sent any more.
      res.destroy();
      return;
    }
    const { status, body } = this.describe(exception);
    if (status === HttpStatus.TOO_MANY_REQUESTS) {
      res.setHeader('Retry-After', '1');
    }
    if (status >= 500) {
      const err = exception instanceof Error ? exception : new Error(String(exception));
      this.logger.error(`unhandled error: ${err.message}`, err.stack);
    }
    res.status(status).json(body);
  }

  private describe(exception: unknown) {
    if (exception instanceof DomainError) {
      const status = statusOf(exception.kind);
      return { status, body: errorBody(status, exception.code, exception.message, exception.details) };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      const raw =
        typeof response === 'object' && response !== null ? (response as { message?: unknown }).message : response;
      const details = Array.isArray(raw) ? raw.map(String) : undefined;
      const message = details ? details.join('; ') : typeof raw === 'string' ? raw : exception.message;
      const code =
        typeof response === 'object' && response !== null && typeof (response as { code?: unknown }).code === 'string'
          ? (response as { code: string }).code
          : (HTTP_CODES[status] ?? (status >= 500 ? 'internal_error' : 'error'));
      if (status >= 500) {
        return { status: 500, body: errorBody(500, 'internal_error', 'Internal server error') };
      }
      return { status, body: errorBody(status, code, message, details) };
    }
    return { status: 500, body: errorBody(500, 'internal_error', 'Internal server error') };
  }
}
