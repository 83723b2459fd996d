import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as oauth from 'oauth4webapi';
import type { Browser } from 'playwright-core';
import { Resend } from 'resend';
import { failed, ok } from '../helpers/resend.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/http.js';

/**
 * One whole OAuth authorization in a real browser (Debian's Chromium through playwright-core):
 * the app sends the person to /oauth/authorize, they sign in on the dashboard's page, see the
 * consent page, untick a scope and approve; the browser lands on the app's redirect URI with a
 * code the app exchanges with its PKCE verifier.
 */

const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'oauth browser password';
const REDIRECT = 'http://127.0.0.1:53683/callback';
const insecure = { [oauth.allowInsecureRequests]: true } as const;
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\``;

describe('OAuth consent in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    const port = await freePort();
    server = await startTestServer({ http: { port, publicUrl: `http://127.0.0.1:${port}` } });
    await server.runtime.services.users.create({
      email: 'ann@browser.test',
      password: PASSWORD,
      workspaceId: server.workspaceId,
      role: 'owner',
    });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('sign in, consent to a subset, come back with a code; the token carries what was approved', async () => {
    const issuer = new URL(server.config.http.publicUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { client_name: 'Browser assistant', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
        insecure,
      ),
    );
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'emails:read domains:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    const page = await browser.newPage();
    let landed: URL | undefined;
    // The app's redirect URI: nothing listens there; the browser's arrival is what counts.
    await page.route('http://127.0.0.1:53683/**', async (route) => {
      landed = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back in the app' });
    });
    await page.goto(url.href);
    assert.match(page.url(), /\/dashboard\/login\?next=/);
    await page.fill('input[name=email]', 'ann@browser.test');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/dashboard\/oauth\/consent\//);
    assert.match((await page.textContent('h1')) ?? '', /Connect Browser assistant/);
    assert.match((await page.textContent('body')) ?? '', /127\.0\.0\.1:53683/);
    await page.uncheck('input[name="scope_domains:read"]');
    await page.click('button[value=approve]');
    await page.waitForURL(/127\.0\.0\.1:53683\/callback/);
    assert.ok(landed);
    const params = oauth.validateAuthResponse(as, client, landed, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure),
    );
    assert.equal(tokens.scope, 'emails:read');
    const resend = new Resend(tokens.access_token, { baseUrl: `${server.httpUrl}/v1` });
    ok(await resend.emails.list(), 'emails.list with the approved scope');
    failed(await resend.domains.list(), 403, 'invalid_access');
    await page.close();
  });
});
