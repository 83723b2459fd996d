import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A memory limit the kernel enforces on a process, as a cgroup (v2 where its memory
 * controller can be given to a child group, else v1's memory hierarchy), made below the test
 * process's own group so that nothing else on the machine is touched. Needs root.
 */
export interface MemoryCgroup {
  path: string;
  version: 1 | 2;
  /** Moves `pid` (and its threads) into the group. */
  add(pid: number): void;
  /** Times the kernel's OOM killer ended a process of the group. */
  oomKills(): number;
  /** The most the group ever held, in bytes (v1, and v2 from Linux 5.19; null where not kept). */
  peak(): number | null;
  /** Removes the group (its processes must have exited). */
  remove(): void;
}

/** The group, or the reason none can be made here (to skip with). */
export function memoryCgroup(name: string, limitBytes: number): MemoryCgroup | string {
  if (process.platform !== 'linux') return 'not Linux: no cgroups';
  if (process.getuid?.() !== 0) return 'not root: cannot make a cgroup';
  const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const made = v2(own, name, limitBytes) ?? v1(own, name, limitBytes);
  return (
    made ?? 'neither a cgroup v2 with the memory controller to delegate nor a v1 memory hierarchy is mounted writable'
  );
}

const read = (file: string): string => readFileSync(file, 'utf8');
const field = (text: string, key: string): number => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

function v2(own: string[], name: string, limit: number): MemoryCgroup | null {
  const root = '/sys/fs/cgroup';
  const rel = own.find((l) => l.startsWith('0::'))?.slice(3);
  if (rel === undefined || !existsSync(join(root, 'cgroup.controllers'))) return null;
  const parent = join(root, rel);
  const path = join(parent, name);
  try {
    if (!read(join(parent, 'cgroup.controllers')).split(/\s+/).includes('memory')) return null;
    // A group with processes of its own cannot give controllers to its children ("no internal processes").
    if (!read(join(parent, 'cgroup.subtree_control')).split(/\s+/).includes('memory'))
      writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory');
    mkdirSync(path);
    writeFileSync(join(path, 'memory.max'), String(limit));
    if (existsSync(join(path, 'memory.swap.max'))) writeFileSync(join(path, 'memory.swap.max'), '0');
    return {
      path,
      version: 2,
      add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
      oomKills: () => field(read(join(path, 'memory.events')), 'oom_kill'),
      peak: () => (existsSync(join(path, 'memory.peak')) ? Number(read(join(path, 'memory.peak'))) : null),
      remove: () => rmdirSync(path),
    };
  } catch {
    if (existsSync(path)) rmdirSync(path);
    return null;
  }
}

function v1(own: string[], name: string, limit: number): MemoryCgroup | null {
  const root = '/sys/fs/cgroup/memory';
  const rel = own.map((l) => l.split(':')).find((p) => p[1]?.split(',').includes('memory'))?.[2];
  if (rel === undefined || !existsSync(join(root, 'memory.limit_in_bytes'))) return null;
  const path = join(root, rel, name);
  try {
    mkdirSync(path);
    writeFileSync(join(path, 'memory.limit_in_bytes'), String(limit));
    // No swap to escape to either (where swap accounting is on).
    if (existsSync(join(path, 'memory.memsw.limit_in_bytes')))
      writeFileSync(join(path, 'memory.memsw.limit_in_bytes'), String(limit));
    return {
      path,
      version: 1,
      add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
      oomKills: () => field(read(join(path, 'memory.oom_control')), 'oom_kill'),
      peak: () => Number(read(join(path, 'memory.max_usage_in_bytes'))),
      remove: () => rmdirSync(path),
    };
  } catch {
    if (existsSync(path)) rmdirSync(path);
    return null;
  }
}
