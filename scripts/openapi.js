#!/usr/bin/env node
// Writes the OpenAPI document generated from the built server to libs/api-client/openapi.json
// (or to stdout with --stdout). Deterministic: the same API gives the same bytes.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

require('reflect-metadata');
const { generateOpenApiDocument } = require('../dist/server/src/openapi-document');

generateOpenApiDocument().then(
  (document) => {
    const text = `${JSON.stringify(document, null, 2)}\n`;
    if (process.argv.includes('--stdout')) {
      process.stdout.write(text);
    } else {
      fs.writeFileSync(path.join(__dirname, '..', 'libs', 'api-client', 'openapi.json'), text);
    }
  },
  (err) => {
    process.stderr.write(`openapi: ${err.stack || err}\n`);
    process.exit(1);
  },
);
