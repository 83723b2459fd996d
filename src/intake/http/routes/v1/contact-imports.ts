import { newId } from '../../../../shared/ids.js';
import { spoolUpload } from '../../multipart-upload.js';
import { defineRoute } from '../../route.js';

/**
 * Resend's contact imports. Listed before the contact routes: GET /v1/contacts/imports would
 * otherwise read `imports` as a contact id.
 */
export const v1ContactImportRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/contacts/imports',
    summary:
      'Import contacts from a CSV file (multipart/form-data: file, column_map, on_conflict, segments, topics); read in the background, see GET for progress',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    multipart: true,
    status: 201,
    handler: async ({ ctx, deps, workspace }) => {
      const id = newId();
      const path = await deps.services.contactImports.spoolPath(id);
      const upload = await spoolUpload(ctx, { path, limit: deps.config.http.importLimit, fileField: 'file' });
      const key = ctx.get('Idempotency-Key');
      return deps.services.contactImports.create(workspace.id, {
        id,
        ...upload,
        idempotencyKey: key === '' ? undefined : key,
      });
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contacts/imports',
    summary: 'List contact imports, newest first (cursor pagination: limit, after, before; status)',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace, query }) =>
      deps.services.contactImports.list(workspace.id, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contacts/imports/:id',
    summary:
      'A contact import: status, counts (total, created, updated, skipped, failed) and the rows it could not import',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace, params }) => deps.services.contactImports.get(workspace.id, params.id!),
  }),
];
