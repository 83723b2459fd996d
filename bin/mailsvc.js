#!/usr/bin/env -S node --max-semi-space-size=16
// Runs the compiled CLI; `npm install` builds dist/ through the `prepare` script.
// The option on the first line: from Node.js 22 on, V8 lets the young generation grow to
// 128 MB (Node.js 20 stopped at 32), and a busy server keeps it resident (a 200,000-row
// contact import: 150 MB more on Node.js 24, under 64 on 20). V8 reads it only
// when the process starts, so it is here; config/mailsvc.service runs this file, and the tests
// and benches start the program with the same options (scripts/launch-flags.ts).
await import('../dist/src/cli/bin.js');
