import { envName, listSettings } from './load-config.js';

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** The configuration table of docs/configuration.md, generated from the schema so the two cannot drift. */
export function configTable(): string {
  const rows = listSettings().map(({ path, setting }) => {
    const def = path === 'delivery.hostname' ? 'os.hostname()' : JSON.stringify(setting.default);
    return `| \`${path}\` | \`${envName(path)}\` | ${cell(setting.kind)} | \`${cell(def)}\` | ${cell(setting.description)} |`;
  });
  return ['| key | environment | type | default | what it does |', '|---|---|---|---|---|', ...rows].join('\n');
}
