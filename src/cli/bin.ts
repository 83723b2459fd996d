import { runCli } from './program.js';

// The process entry point (bin/mailsvc.js loads the compiled copy of this file).
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stderrIsTTY: process.stderr.isTTY === true,
  columns: process.stderr.columns,
});
