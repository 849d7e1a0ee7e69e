// Jest setupFiles entry of the integration project, run in each test file's worker before its
// tests: reads the stack global set-up started, so a missing stack fails every file at once with
// one clear message instead of each test with a connection error.
import { stack } from './stack';

stack();
