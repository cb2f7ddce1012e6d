import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

import { PUBLIC_ROUTES } from './public-routes';
import { CONFIGURATION_DEFAULTS } from '../configuration/configuration.schema';
import { packageVersion } from '../package-info';

type Responses = Record<string, { description: string; content?: unknown }>;
interface Operation {
  parameters?: { in: string }[];
  requestBody?: unknown;
  responses: Responses;
  security?: unknown[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const ERROR_BODY = { content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } };

/**
 * Answers the HTTP middleware gives before any controller runs, so no controller decorator can
 * document them: without them, clients (and linters) would believe most operations never fail.
 */
const MIDDLEWARE_ANSWERS = {
  invalidInput:
    'Invalid input: a malformed or oversized JSON body, or a query parameter containing NUL (`code` says which)',
  refused:
    'Refused before anything is read: a Host header that is not a loopback name, or a state-changing request from another origin (CSRF)',
  unauthorized:
    'Missing or invalid credentials (`agent-manager token`), or a run credential that is unknown, revoked or expired',
};

/** The OpenAPI document, generated from the controllers and DTOs; operationId = method name. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Agent Manager API')
    .setDescription('Local control plane for agent-driven software delivery. All paths are under /api.')
    .setVersion(packageVersion())
    .setLicense('MIT', 'https://opensource.org/license/mit')
    // First the origin the document came from (the explorer's "Try it out" then calls the server
    // that served it, whatever its port or loopback name), then the default loopback address.
    .addServer('/', 'The server that serves this document')
    .addServer(
      `http://127.0.0.1:${CONFIGURATION_DEFAULTS.port}`,
      'The local server on its default port (`port` in the configuration changes it)',
    )
    .addBearerAuth(
      { description: 'The local token (`agent-manager token`) or a run credential', scheme: 'bearer', type: 'http' },
      'bearer',
    )
    .addSecurityRequirements('bearer')
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (_controllerKey: string, methodKey: string) => methodKey,
  });
  return sortKeys(withMiddlewareAnswers(document)) as OpenAPIObject;
}

/** Adds the error body schema, the middleware's 400/401/403 answers, and marks the public routes as needing no credentials. */
function withMiddlewareAnswers(document: OpenAPIObject): OpenAPIObject {
  document.components ??= {};
  document.components.schemas = {
    ...document.components.schemas,
    ErrorBody: {
      description: 'The JSON body of every error answer. `code` is stable; `message` is for people.',
      properties: {
        code: { example: 'unauthorized', type: 'string' },
        details: { items: { type: 'string' }, type: 'array' },
        error: { example: 'Unauthorized', type: 'string' },
        message: { type: 'string' },
        statusCode: { example: 401, type: 'integer' },
      },
      required: ['statusCode', 'error', 'code', 'message'],
      type: 'object',
    },
  };
  for (const [route, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = (item as Record<string, Operation | undefined>)[method];
      if (!operation) {
        continue;
      }
      const responses = operation.responses;
      const add = (status: string, description: string) => {
        // A controller's own description (a 403 for a run outside its scope, say) says more; keep it.
        responses[status] = responses[status]?.description
          ? { ...ERROR_BODY, ...responses[status] }
          : { ...ERROR_BODY, description };
      };
      if (operation.requestBody || operation.parameters?.some((p) => p.in === 'query')) {
        add('400', MIDDLEWARE_ANSWERS.invalidInput);
      }
      if (PUBLIC_ROUTES.has(`${method.toUpperCase()} ${route}`)) {
        operation.security = [];
      } else {
        add('401', MIDDLEWARE_ANSWERS.unauthorized);
      }
      add('403', MIDDLEWARE_ANSWERS.refused);
    }
  }
  return document;
}

export function setUpOpenApi(app: INestApplication): void {
  // Built at the first request for it, not at every start: most starts never serve it.
  SwaggerModule.setup('api/docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'api/openapi.json',
    raw: ['json'],
    useGlobalPrefix: false,
  });
}

/** Deterministic key order, so the committed document and client only change when the API does. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(sortKeys);
  }
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as Record<string, unknown>)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
