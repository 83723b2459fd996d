import { pino, type Logger as PinoLogger, type DestinationStream } from 'pino';

export type Logger = PinoLogger;
type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Structured JSON logs. Fields that could carry a secret are redacted by name as a second
 * line of defence; the first is never passing keys, secrets or bodies to the logger at all.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'mailsvc' },
      redact: {
        paths: [
          'authorization',
          'password',
          'secret',
          'apiKey',
          'key',
          'token',
          '*.authorization',
          '*.password',
          '*.secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
