#!/usr/bin/env node
'use strict';
// The command is the bundle tsup builds from src/ (npm install at the repository root builds it;
// so does `make test`, and `npm pack` before packing).
try {
  require.resolve('../dist/svc.js');
} catch {
  process.stderr.write('svc: the CLI is not built yet: run `npm run build -w services/cli` (or `npm install`) in the repository\n');
  process.exit(1);
}
require('../dist/svc.js');
