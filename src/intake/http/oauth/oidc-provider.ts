import { lazyImport } from '../../../shared/lazy-import.js';

/**
 * oidc-provider, imported on the first OAuth request (it is the largest library of the server:
 * about 600 modules, issue 34), without its start-up warning on Node.js 20 ("Unsupported
 * runtime. Use Node.js v22.x LTS"): it runs there (the suite passes on 20 and 24), and the
 * warning would otherwise come in the middle of the server's log. Node.js 20 is past its end of
 * life; docs/operations.md says which versions to run. Any other warning of the library passes.
 */
export const oidcProvider = lazyImport(async () => {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!(typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime')))
      warn(...args);
  };
  try {
    const library = await import('oidc-provider');
    return { Provider: library.default, errors: library.errors };
  } finally {
    console.warn = warn;
  }
});

export type OidcErrors = Awaited<ReturnType<typeof oidcProvider>>['errors'];
