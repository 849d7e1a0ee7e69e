// Prints the totals of every results file given (Jest's, then Vitest's, which writes the same
// shape) as the plain line CI reads: "N passed, N failed".
// A results file that is missing or unreadable (a crash in global set-up) counts as one failure.
const fs = require('node:fs');
let passed = 0;
let failed = 0;
for (const file of process.argv.slice(2)) {
  try {
    const results = JSON.parse(fs.readFileSync(file, 'utf8'));
    passed += results.numPassedTests;
    // Suites that failed to run (syntax errors, set-up failures) have no failing test of their own.
    let fileFailed = results.numFailedTests + (results.numRuntimeErrorTestSuites ?? 0);
    if (!results.success && fileFailed === 0) fileFailed = 1;
    failed += fileFailed;
  } catch {
    failed += 1;
  }
}
console.log(`${passed} passed, ${failed} failed`);
