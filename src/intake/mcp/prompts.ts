import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

/** The studio's two conversations, as prompts a person picks in their assistant. */
export function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'design_email_template',
    {
      title: 'Design an email template',
      description:
        "Design, check and preview a template in MJML with mailsvc's tools, then publish it when the person approves",
      argsSchema: {
        purpose: z.string().describe('What the email is for, e.g. "order shipped"'),
        brand: z.string().optional().describe('Colours, tone, logo URL'),
      },
    },
    ({ purpose, brand }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              `Design an email template for: ${purpose}.${brand ? ` Brand: ${brand}.` : ''}`,
              'Write it in MJML (mj-section, mj-column, mj-text, mj-button, mj-image with alt text): it compiles to HTML that Outlook and Gmail render.',
              'Declare every {{variable}} with a fallback_value and a sample_value.',
              'Then: templates_create with mjml; templates_check (fix every warning and error it reports, e.g. unsupported CSS, missing alt, http links); templates_preview with sample variables and show me the subject and text.',
              'Do not publish (templates_publish) or send until I say so; templates_send_test sends me a test when I ask.',
            ].join('\n'),
          },
        },
      ],
    }),
  );
  server.registerPrompt(
    'write_broadcast',
    {
      title: 'Write a broadcast',
      description:
        'Draft a broadcast to a segment, preview it, and send it only after the person confirms the recipient count',
      argsSchema: {
        topic: z.string().describe('What the broadcast announces'),
        segment: z.string().optional().describe('The segment (name or id) it goes to'),
      },
    },
    ({ topic, segment }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              `Write a broadcast about: ${topic}.${segment ? ` It goes to the segment ${segment}.` : ' Ask me which segment (segments_list) it goes to.'}`,
              'Include an unsubscribe link: <a href="{{{unsubscribe_url}}}">Unsubscribe</a>.',
              'Create it as a draft (broadcasts_create), then broadcasts_preview and show me the subject, the text and the recipient count.',
              'Call broadcasts_send without confirm first; send with confirm: true only after I agree to the number of recipients it reports.',
            ].join('\n'),
          },
        },
      ],
    }),
  );
}
