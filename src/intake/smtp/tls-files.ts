import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../../config/load-config.js';
import type { Config } from '../../config/schema.js';
import { submissionTlsPaths } from '../../config/tls-paths.js';

export interface TlsPair {
  key: Buffer;
  cert: Buffer;
  /** Where the pair came from, for the start-up log. */
  source: string;
}

const read = (file: string, key: string): Buffer => {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(`config: ${key}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
};

/**
 * The submission listeners' certificate: the configured files, or a self-signed pair
 * generated once into `<dataDir>/tls/` and reused (clients pin it or skip verification on a
 * laptop; production configures real files).
 */
export async function loadSubmissionTls(config: Config): Promise<TlsPair> {
  const configured = config.smtp.submission.tls;
  if (configured) {
    return {
      key: read(configured.key, 'smtp.submission.tls.key'),
      cert: read(configured.cert, 'smtp.submission.tls.cert'),
      source: configured.cert,
    };
  }
  const { key: keyFile, cert: certFile } = submissionTlsPaths(config);
  const dir = dirname(certFile);
  if (!existsSync(keyFile) || !existsSync(certFile)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const hostname = config.delivery.hostname;
    // Loaded only when a pair must be made: the X.509 library costs start-up time and memory.
    const { generate } = await import('selfsigned');
    const pems = await generate([{ name: 'commonName', value: hostname }], {
      keySize: 2048,
      notAfterDate: new Date(Date.now() + 10 * 365 * 24 * 3600 * 1000),
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: false },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: hostname },
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
      ],
    });
    writeFileSync(keyFile, pems.private, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    writeFileSync(certFile, pems.cert);
  }
  return { key: readFileSync(keyFile), cert: readFileSync(certFile), source: `${certFile} (self-signed)` };
}
