import { normalize } from '../middleware/render-errors.js';
import type { DashCtx } from './session.js';

/**
 * Runs what a form asks for; when the input is refused (a 4xx), the form comes back with what
 * was typed and the reason beside it, in the same status, rather than an error page that loses
 * the input. Server failures still go to the error page.
 */
export async function formAction(
  ctx: DashCtx,
  act: () => Promise<void>,
  again: (error: string) => Promise<string>,
): Promise<void> {
  try {
    await act();
  } catch (thrown) {
    const err = normalize(thrown);
    if (err.status >= 500 || err.status === 401 || err.status === 429) throw thrown;
    ctx.status = err.status;
    ctx.body = await again(err.message);
  }
}
