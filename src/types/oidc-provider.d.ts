// oidc-provider 9 ships no type declarations; this is the part of its API the authorization server uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  import type Koa from 'koa';

  export interface ProviderClient {
    clientId: string;
    clientName?: string;
    redirectUris: string[];
    clientAuthMethod: string;
    grantTypeAllowed(type: string): boolean;
  }

  export interface InteractionPrompt {
    name: string;
    reasons: string[];
    details: { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]>; [key: string]: unknown };
  }

  export interface ProviderInteraction {
    uid: string;
    params: Record<string, unknown> & {
      client_id?: string;
      redirect_uri?: string;
      scope?: string;
      resource?: string | string[];
    };
    prompt: InteractionPrompt;
    grantId?: string;
    session?: { accountId?: string };
    returnTo: string;
    exp: number;
  }

  export interface ProviderGrant {
    addOIDCScope(scope: string): void;
    rejectOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    rejectResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export interface OIDCContext {
    route: string;
    client?: ProviderClient;
    params?: Record<string, unknown>;
  }

  export type ProviderCtx = Koa.Context & { oidc: OIDCContext };

  export class Provider extends Koa {
    constructor(issuer: string, configuration: Record<string, unknown>);
    issuer: string;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<ProviderInteraction>;
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    urlFor(name: string, options?: Record<string, unknown>): string;
    Client: { find(id: string): Promise<ProviderClient | undefined> };
    Grant: new (fields: { accountId: string; clientId: string }) => ProviderGrant;
    AccessToken: { prototype: { generateTokenId(this: { format?: string }): string } };
    on(event: string, listener: (ctx: unknown, arg: never) => void): this;
  }

  export class OIDCProviderError extends Error {
    constructor(message?: string);
    status: number;
    error: string;
    error_description?: string;
  }

  export const errors: {
    OIDCProviderError: typeof OIDCProviderError;
    InvalidRedirectUri: typeof OIDCProviderError;
    InvalidClientMetadata: typeof OIDCProviderError;
    InvalidTarget: typeof OIDCProviderError;
    AccessDenied: typeof OIDCProviderError;
  };

  export default Provider;
}
