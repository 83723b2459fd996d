import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { root } from './lib.js';

/** A free loopback TCP port (for programs that cannot be told to pick one). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on 127.0.0.1:port (bounded: 15 s). */
export async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port}`);
}

/** Where a Postfix test tool lives, if Postfix is installed. */
export function postfixTool(name: string): string | null {
  for (const dir of ['/usr/sbin', '/usr/lib/postfix', '/usr/libexec/postfix', '/usr/local/sbin']) {
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return which.status === 0 ? which.stdout.trim() : null;
}

export interface Sink {
  port: number;
  kind: 'smtp-sink' | 'node';
  /** Messages received so far. */
  count(): number;
  stop(): Promise<void>;
}

/**
 * The loopback sink MX: Postfix's smtp-sink (C, cheap on the shared cores) when installed,
 * else a node smtp-server in its own process. Both count received messages. `atPort` opens it
 * on a port chosen before (a destination that comes back after an outage).
 */
export async function startSink(atPort?: number): Promise<Sink> {
  const port = atPort ?? (await freePort());
  const smtpSink = postfixTool('smtp-sink');
  let child: ChildProcess;
  if (smtpSink) {
    const asRoot = process.getuid?.() === 0;
    child = spawn(smtpSink, ['-c', ...(asRoot ? ['-u', 'nobody'] : []), `127.0.0.1:${port}`, '1000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } else {
    child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/sink.ts'), String(port)], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }
  let messages = 0;
  let tail = '';
  child.stdout!.on('data', (d: Buffer) => {
    tail = (tail + d.toString()).slice(-200);
    const all = [...tail.matchAll(/mesg=(\d+)/g)];
    if (all.length > 0) messages = Number(all[all.length - 1]![1]);
  });
  await waitForPort(port);
  return {
    port,
    kind: smtpSink ? 'smtp-sink' : 'node',
    count: () => messages,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
