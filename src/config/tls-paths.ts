import { join } from 'node:path';
import type { Config } from './schema.js';

/** Where the submission listeners' certificate lives: the configured files, or the self-signed pair generated into `<dataDir>/tls/`. */
export function submissionTlsPaths(config: Config): { key: string; cert: string; generated: boolean } {
  const configured = config.smtp.submission.tls;
  if (configured) return { key: configured.key, cert: configured.cert, generated: false };
  const dir = join(config.dataDir, 'tls');
  return { key: join(dir, 'submission-key.pem'), cert: join(dir, 'submission-cert.pem'), generated: true };
}
