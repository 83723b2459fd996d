/**
 * oidc-provider, imported without its start-up warning on Node.js 20 ("Unsupported runtime. Use
 * Node.js v22.x LTS"): it runs there (the suite passes on 20 and 24), and the warning would
 * otherwise come before the output of every `mailsvc` command. Node.js 20 is past its end of
 * life; docs/operations.md says which versions to run. Any other warning of the library passes.
 */
const warn = console.warn;
console.warn = (...args: unknown[]) => {
  if (!(typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime'))) warn(...args);
};
let library: typeof import('oidc-provider');
try {
  library = await import('oidc-provider');
} finally {
  console.warn = warn;
}

export const Provider = library.default;
export const errors = library.errors;
