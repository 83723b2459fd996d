import { z } from 'zod';
import { AppError, isAppError, validationError } from '../../../../shared/errors.js';
import { requireAddress, singleLine } from '../../../../messages/addresses.js';
import { limitFor } from '../../../../services/rate-limits.js';
import { setRateLimitHeaders } from '../../rate-limit.js';
import { defineRoute } from '../../route.js';
import { attachmentSchema } from '../v1/emails.js';

const legacySendBody = z.object({
  to: z.string(),
  subject: z.string(),
  html: z.string().optional(),
  templateId: z.string().optional(),
  from_name: z.string().max(200).optional(),
  from_email: z.string().optional(),
  variables: z.record(z.string(), z.unknown()).optional(),
  type: z.enum(['transactional', 'marketing']).optional(),
  attachments: z.array(attachmentSchema).max(50).optional(),
  external_id: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const legacySendRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v1/send',
    summary: 'Send one transactional or marketing email',
    operation: null,
    scope: 'emails:send',
    status: 202,
    body: legacySendBody,
    handler: async ({ ctx, deps, workspace, principal, body }) => {
      if (body.html === undefined && body.templateId === undefined)
        throw validationError('html', 'is required if templateId is absent');
      if (body.html !== undefined && body.templateId !== undefined)
        throw validationError('templateId', 'cannot be combined with html: give exactly one');
      const fromName = singleLine('from_name', body.from_name ?? 'System');
      const type = body.type ?? 'transactional';
      let outcome;
      try {
        outcome = await deps.services.send.send(workspace, {
          intake: 'legacy',
          test: principal.kind === 'test',
          senderDomainId: principal.domainId,
          from: {
            name: fromName,
            address:
              body.from_email === undefined
                ? (await deps.services.send.defaultSender(workspace)).address
                : requireAddress('from_email', body.from_email),
          },
          fromField: 'from_email',
          to: [{ name: '', address: requireAddress('to', body.to) }],
          subject: body.subject,
          html: body.html,
          templateId: body.templateId,
          variables: body.variables,
          attachments: body.attachments,
          externalId: body.external_id,
          metadata: body.metadata,
          type,
        });
      } catch (err) {
        // The legacy surface reports an unknown template as a bad parameter (400).
        if (isAppError(err) && err.code === 'not_found' && err.field === 'templateId')
          throw new AppError('validation_error', err.message, { field: 'templateId' });
        throw err;
      }
      setRateLimitHeaders(ctx, outcome.limit);
      const [result] = outcome.results;
      const rate = limitFor(type === 'marketing' ? 'send.marketing' : 'send.transactional', workspace).limit;
      const message = result!.demoted
        ? `Email queued at marketing priority: the transactional rate of ${rate} per second was exceeded`
        : `Email queued for delivery at ${type} priority (${type === 'marketing' ? 'limit' : 'soft limit'} ${rate} emails per second)`;
      return { success: true, message, id: result!.id };
    },
  }),
];
