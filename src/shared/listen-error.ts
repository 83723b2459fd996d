/**
 * A listener that could not bind its address. It names the setting that chose the port (and
 * the one that chose the host), so that the message tells the operator which key to change:
 * with three SMTP ports and the HTTP port, "address in use" alone does not.
 */
export class ListenError extends Error {
  override name = 'ListenError';
  readonly code: string;

  constructor(
    cause: unknown,
    /** The port's setting, e.g. `smtp.submission.port`. */
    readonly setting: string,
    /** The host's setting, e.g. `smtp.submission.host`. */
    readonly hostSetting: string,
    readonly host: string,
    readonly port: number,
  ) {
    super(`cannot listen on ${host}:${port} (${setting}): ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.code = (cause as NodeJS.ErrnoException)?.code ?? 'UNKNOWN';
  }
}

/** `err` as a ListenError for the setting, when it is a failure to bind. */
export const asListenError = (
  err: unknown,
  setting: string,
  hostSetting: string,
  host: string,
  port: number,
): unknown =>
  err instanceof Error && 'syscall' in err && (err as NodeJS.ErrnoException).syscall === 'listen'
    ? new ListenError(err, setting, hostSetting, host, port)
    : err;
