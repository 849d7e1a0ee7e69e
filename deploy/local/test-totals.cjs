// Prints jest's totals as the plain line CI reads: "N passed, N failed".
// A run that produced no results file (a crash in global set-up) counts as one failure.
const fs = require('node:fs');
const file = process.argv[2];
let passed = 0;
let failed = 1;
try {
  const results = JSON.parse(fs.readFileSync(file, 'utf8'));
  passed = results.numPassedTests;
  // Suites that failed to run (syntax errors, set-up failures) have no failing test of their own.
  failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
  if (!results.success && failed === 0) failed = 1;
} catch {
  // keep the defaults: nothing ran
}
console.log(`${passed} passed, ${failed} failed`);
