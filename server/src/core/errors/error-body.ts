import { STATUS_CODES } from 'node:http';

/** The JSON body of every error answer. `code` is stable; `message` is for people. */
export interface ErrorBody {
  statusCode: number;
  error: string;
  code: string;
  message: string;
  details?: string[];
}

export function errorBody(statusCode: number, code: string, message: string, details?: string[]): ErrorBody {
  return {
    statusCode,
    error: STATUS_CODES[statusCode] ?? 'Error',
    code,
    message,
    ...(details && details.length > 0 ? { details } : {}),
  };
}
