#!/usr/bin/env node
// The `prospect` command. It is committed, not built, because npm links no bin
// whose file is missing: `npm ci` on a fresh clone runs before any build, and
// `npx prospect` would then find nothing. The code is the bundle that
// `npm run build` (and `npm start`) writes to dist/.
'use strict';
try {
  require('../dist/prospect.js');
} catch (err) {
  if (err?.code !== 'MODULE_NOT_FOUND' || !String(err.message).includes('dist/prospect.js')) throw err;
  process.stderr.write('Error: prospect is not built yet.\nRun `npm run build` (or `npm start`) in the repository first.\n');
  process.exitCode = 1;
}
