#!/usr/bin/env node
// Runs the compiled CLI; `npm install` builds dist/ through the `prepare` script.
await import('../dist/src/cli/bin.js');
