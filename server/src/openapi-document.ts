import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { OpenAPIObject } from '@nestjs/swagger';

import { AppModule } from './app.module';
import { ConfigurationService } from './core/configuration/configuration.service';
import { configureHttp, createExpressInstance } from './configure-http';
import { PLAIN_HTTP } from './core/http/serving';
import { buildOpenApiDocument } from './core/http/openapi';
import { FileLogger } from './core/logging/file-logger';
import { packageVersion } from './core/package-info';
import { resolveWorkspace } from './core/workspace/workspace';

/**
 * Builds the OpenAPI document the way the server serves it, without listening and without
 * touching any real workspace (a throwaway data directory), for `npm run openapi` and the
 * drift check.
 */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-manager-openapi-'));
  try {
    const paths = resolveWorkspace(scratch, path.join(scratch, 'home'));
    const configuration = new ConfigurationService(paths.defaultConfigPath, {});
    const logger = new FileLogger({ filePath: paths.defaultLogFilePath, level: 'error', maxFiles: '1', maxSize: '1m' });
    const app = await NestFactory.create(
      AppModule.forRoot({
        configuration,
        databasePath: paths.defaultDatabasePath,
        store: { kind: 'sqlite', path: paths.defaultDatabasePath },
        logFilePath: paths.defaultLogFilePath,
        logger,
        paths,
        serving: PLAIN_HTTP,
        // Only the document's shapes are read: no person is asked about.
        person: { email: null, id: 'person_openapi', name: 'openapi', source: 'configuration' },
        version: packageVersion(),
      }),
      new ExpressAdapter(createExpressInstance()),
      { abortOnError: false, bodyParser: false, logger },
    );
    configureHttp(app);
    await app.init();
    const document = buildOpenApiDocument(app);
    await app.close();
    await logger.close();
    return document;
  } finally {
    fs.rmSync(scratch, { force: true, recursive: true });
  }
}
