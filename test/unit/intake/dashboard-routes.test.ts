import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import Router from '@koa/router';
import { DashRoutes } from '../../../src/intake/http/dashboard/routes.js';
import type { DashState } from '../../../src/intake/http/dashboard/session.js';
import { repoPath } from '../../../scripts/repo-root.js';

/**
 * The dashboard's one role check (routes.ts) and the rule that keeps pages honest: a form that
 * changes something is drawn only through the layout's postForm/actionButton, which ask the
 * same check, so no page can offer a role a button the server would refuse.
 */

const PAGES = pathToFileURL(`${repoPath('src/intake/http/dashboard/pages')}/`);

describe('dashboard routes', () => {
  const routes = new DashRoutes(new Router<DashState>({ prefix: '/dashboard' }));
  const noop = () => undefined;
  routes.get('/campaigns/new', 'send', noop);
  routes.get('/campaigns/:id', 'read', noop);
  routes.post('/keys', 'manage', noop);
  routes.post('/keys/:id/revoke', 'manage', noop);
  routes.post('/logout', 'session', noop);

  it('matches the declared route, a literal before a parameter', () => {
    assert.equal(routes.find('GET', '/dashboard/campaigns/new')?.needs, 'send');
    assert.equal(routes.find('GET', '/dashboard/campaigns/0190')?.needs, 'read');
    assert.equal(routes.find('HEAD', '/dashboard/campaigns/0190')?.needs, 'read');
    assert.equal(routes.find('GET', '/dashboard/campaigns/0190/more'), undefined);
    assert.equal(routes.find('GET', '/dashboard/keys'), undefined, 'a method not declared');
    assert.equal(routes.find('POST', '/dashboard/keys/x/revoke?next=1')?.path, '/keys/:id/revoke');
  });

  it('permits by the role’s permissions; an undeclared path never', () => {
    assert.equal(routes.permits('viewer', 'GET', '/dashboard/campaigns/1'), true);
    assert.equal(routes.permits('viewer', 'GET', '/dashboard/campaigns/new'), false);
    assert.equal(routes.permits('developer', 'GET', '/dashboard/campaigns/new'), true);
    assert.equal(routes.permits('developer', 'POST', '/dashboard/keys'), false);
    assert.equal(routes.permits('admin', 'POST', '/dashboard/keys'), true);
    assert.equal(routes.permits('viewer', 'POST', '/dashboard/logout'), true);
    assert.equal(routes.permits('owner', 'POST', '/dashboard/nowhere'), false);
  });

  it('refuses a route declared twice', () => {
    assert.throws(() => routes.post('/keys', 'send', noop), /declared twice/);
  });

  it('pages draw POST forms only through postForm or actionButton', () => {
    const offenders = readdirSync(PAGES)
      .filter((f) => f.endsWith('.ts') && f !== 'login.ts')
      // The OAuth consent form is served beside sign-in, before the dashboard's session check (it checks the session itself).
      .filter(
        (f) => f !== 'oauth.ts' || (readFileSync(new URL(f, PAGES), 'utf8').match(/method="post"/gi) ?? []).length > 1,
      )
      .filter((f) => /method="post"/i.test(readFileSync(new URL(f, PAGES), 'utf8')));
    assert.deepEqual(
      offenders,
      [],
      'login.ts and the OAuth consent form (before the session check) alone write their forms themselves',
    );
  });
});
