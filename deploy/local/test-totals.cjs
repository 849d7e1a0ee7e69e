// Prints the totals of every results file given (Jest's, then Vitest's, which writes the same
// shape) as the plain line CI reads: "N passed, N failed".
// A results file that is missing or unreadable (a crash in global set-up) counts as one failure.
// Above the totals it names each failed test with the head of its failure message: CI keeps only
// the end of the output, where Jest's own report of a failure is long scrolled away.
const fs = require('node:fs');
const path = require('node:path');

const MESSAGE_LINES = 12;
// eslint-disable-next-line no-control-regex
const stripAnsi = (text) => text.replace(/\u001b\[[0-9;]*m/g, '');
const head = (text) =>
  stripAnsi(text)
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s+at /.test(line))
    .slice(0, MESSAGE_LINES)
    .map((line) => `    ${line}`)
    .join('\n');

let passed = 0;
let failed = 0;
const failures = [];
for (const file of process.argv.slice(2)) {
  try {
    const results = JSON.parse(fs.readFileSync(file, 'utf8'));
    passed += results.numPassedTests;
    // Suites that failed to run (syntax errors, set-up failures) have no failing test of their own.
    let fileFailed = results.numFailedTests + (results.numRuntimeErrorTestSuites ?? 0);
    if (!results.success && fileFailed === 0) fileFailed = 1;
    failed += fileFailed;
    for (const suite of results.testResults ?? []) {
      const where = path.relative(process.cwd(), suite.name ?? '?');
      const tests = (suite.assertionResults ?? []).filter((test) => test.status === 'failed');
      for (const test of tests) failures.push(`FAILED ${where} › ${test.fullName ?? test.title}\n${head((test.failureMessages ?? []).join('\n'))}`);
      if (tests.length === 0 && suite.status === 'failed') failures.push(`FAILED ${where} (the file itself)\n${head(suite.message ?? '')}`);
    }
  } catch {
    failed += 1;
    failures.push(`FAILED: ${file} is missing or unreadable (the run crashed before writing it)`);
  }
}
if (failures.length > 0) console.log(failures.join('\n'));
console.log(`${passed} passed, ${failed} failed`);
