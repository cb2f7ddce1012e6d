import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

import { packageVersion } from '../package-info';

/** The OpenAPI document, generated from the controllers and DTOs; operationId = method name. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Agent Manager API')
    .setDescription('Local control plane for agent-driven software delivery. All paths are under /api.')
    .setVersion(packageVersion())
    .addBearerAuth({ description: 'The local token (`agent-manager token`) or a run credential', scheme: 'bearer', type: 'http' }, 'bearer')
    .addSecurityRequirements('bearer')
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (_controllerKey: string, methodKey: string) => methodKey,
  });
  return sortKeys(document) as OpenAPIObject;
}

export function setUpOpenApi(app: INestApplication): void {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('api/docs', app, document, {
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
