// Runs the benchmarks: `npm run bench` runs every bench/*.bench.ts; `npm run bench -- NAME…`
// runs the named ones. Each module exports `name`, `description` and `run()`, which prints
// its own figures. Figures vary ±20% between runs on a shared machine: compare within a run.
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface Bench {
  name: string;
  description: string;
  run(): Promise<void>;
}

const dir = fileURLToPath(new URL('.', import.meta.url));
const benches: Bench[] = [];
for (const file of readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).sort()) {
  benches.push((await import(pathToFileURL(`${dir}/${file}`).href)) as Bench);
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !benches.some((b) => b.name === w));
if (unknown.length > 0) {
  console.error(`unknown bench ${unknown.join(', ')}; known: ${benches.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
for (const bench of benches.filter((b) => wanted.length === 0 || wanted.includes(b.name))) {
  console.log(`\n## ${bench.name}: ${bench.description}`);
  await bench.run();
}
