import { createInterface } from 'node:readline/promises';
import { runCli } from './program.js';

/** One line typed at the terminal; the question goes to stderr so stdout stays the command's output. */
async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await rl.question(question);
  } finally {
    rl.close();
  }
}

// The process entry point (bin/mailsvc.js loads the compiled copy of this file).
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stderrIsTTY: process.stderr.isTTY === true,
  stdoutIsTTY: process.stdout.isTTY === true,
  stdinIsTTY: process.stdin.isTTY === true,
  ask,
  columns: process.stderr.columns,
});
