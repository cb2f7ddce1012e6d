#!/usr/bin/env node
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const entry = path.join(__dirname, '..', 'dist', 'cli', 'src', 'agent-manager.js');
if (!fs.existsSync(entry)) {
  process.stderr.write(
    'agent-manager: not built yet; run `npm run build` (or `npm start`) in ' + path.dirname(__dirname) + '\n',
  );
  process.exit(1);
}
require(entry);
