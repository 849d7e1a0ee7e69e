#!/usr/bin/env node
'use strict';
// The local MCP server is the bundled CLI's `mcp` command (one bundle for both bins): an MCP
// client's config names `svc-mcp` with no arguments, so the command is put in front of them.
try {
  require.resolve('../dist/svc.js');
} catch {
  process.stderr.write('svc-mcp: the CLI is not built yet: run `npm run build -w services/cli` (or `npm install`) in the repository\n');
  process.exit(1);
}
process.argv.splice(2, 0, 'mcp');
require('../dist/svc.js');
