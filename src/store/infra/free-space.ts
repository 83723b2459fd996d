import { existsSync, statfsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AppError } from '../../shared/errors.js';

/**
 * The reserve of disk space below which new mail is refused (Postfix's `queue_minfree`), so
 * that the database never meets a full disk in the middle of a write: queued mail, webhooks
 * and reads go on (delivery frees space as it goes) while intakes answer a temporary refusal.
 * A statfs per file system, at most once a second.
 */

export interface SpaceReading {
  /** A directory on the file system (the database's, `dataDir`). */
  path: string;
  /** Bytes an unprivileged writer may still use. */
  freeBytes: number;
  totalBytes: number;
  /** The reserve (`storage.minFreeBytes`, resolved): below it, new mail is refused. 0: no check. */
  minFreeBytes: number;
}

export interface FreeSpace {
  /** Throws `storage_full` when a watched file system is below its reserve. */
  ensure(): void;
  /** The watched file systems, as last read (re-read when older than a second). */
  read(): SpaceReading[];
  /** True while every watched file system is above its reserve. */
  ok(): boolean;
}

const CACHE_MS = 1000;
const AUTO_CAP = 256 * 1024 * 1024;
const AUTO_SHARE = 0.05;

/** `storage.minFreeBytes` for a file system of `totalBytes`: "auto" is 256 MB or 5%, whichever is smaller. */
export const reserveFor = (setting: number | 'auto', totalBytes: number): number =>
  setting === 'auto' ? Math.min(AUTO_CAP, Math.floor(totalBytes * AUTO_SHARE)) : setting;

/** The nearest existing directory at or above `path` (the data directory may not exist yet). */
function existing(path: string): string | null {
  let dir = resolve(path);
  for (let i = 0; i < 64; i++) {
    if (existsSync(dir)) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return null;
}

export function watchFreeSpace(paths: string[], setting: number | 'auto', now: () => number = Date.now): FreeSpace {
  // One entry per file system (by device), so that a data directory beside the database is read once.
  const dirs: string[] = [];
  const devices = new Set<number>();
  for (const p of paths) {
    const dir = existing(p);
    if (!dir) continue;
    const dev = statSync(dir).dev;
    if (devices.has(dev)) continue;
    devices.add(dev);
    dirs.push(dir);
  }
  let readAt = -Infinity;
  let readings: SpaceReading[] = [];

  const read = (): SpaceReading[] => {
    if (now() - readAt < CACHE_MS) return readings;
    readAt = now();
    readings = dirs.flatMap((path) => {
      try {
        const s = statfsSync(path);
        const totalBytes = s.blocks * s.bsize;
        return [{ path, freeBytes: s.bavail * s.bsize, totalBytes, minFreeBytes: reserveFor(setting, totalBytes) }];
      } catch {
        // A directory gone or unreadable is the database's to report when it is written.
        return [];
      }
    });
    return readings;
  };
  const low = () => read().find((r) => r.minFreeBytes > 0 && r.freeBytes < r.minFreeBytes);

  return {
    read,
    ok: () => low() === undefined,
    ensure() {
      const short = low();
      if (!short) return;
      throw new AppError(
        'storage_full',
        `The server's storage is below its reserve (${megabytes(short.freeBytes)} free, storage.minFreeBytes ${megabytes(short.minFreeBytes)}): it accepts no new mail until its operator frees disk space. Nothing accepted before is lost; retry later.`,
        { retryAfter: 60 },
      );
    },
  };
}

const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
