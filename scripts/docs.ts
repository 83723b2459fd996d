// Regenerates the generated parts of README.md (the configuration table): `npm run docs`.
import { readFileSync, writeFileSync } from 'node:fs';
import { configTable } from '../src/config/describe-config.js';

const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';
const readme = readFileSync('README.md', 'utf8');
const before = readme.slice(0, readme.indexOf(START) + START.length);
const after = readme.slice(readme.indexOf(END));
writeFileSync('README.md', `${before}\n${configTable()}\n${after}`);
