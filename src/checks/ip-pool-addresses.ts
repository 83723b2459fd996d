import { createServer } from 'node:net';
import { isNoRecordError, type DnsResolver } from '../shared/dns.js';
import type { Db } from '../store/infra/db.js';
import { listIpPools } from '../store/ip-pools.js';
import type { CheckStatus } from './check-status.js';
import { ptrName } from './reverse-name.js';

interface PoolAddressCheck {
  name: string;
  status: CheckStatus;
  required: boolean;
  message: string;
  fix: string | null;
}

/** Whether this host can send from `address`: binding a socket to it is what every connection will do. */
function canBind(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen(0, address, () => server.close(() => resolve(null)));
  });
}

/**
 * Each IP pool address: bound on this host (required: mail from an address that cannot be
 * bound is deferred, never sent from another), and its PTR naming its EHLO name (advice).
 */
export async function ipPoolChecks(db: Db, resolver: DnsResolver): Promise<PoolAddressCheck[]> {
  const pools = await listIpPools(db);
  const checks = pools.flatMap((pool) =>
    pool.addresses.map(async (a): Promise<PoolAddressCheck[]> => {
      const name = `ip_pool ${pool.name} ${a.address}`;
      const error = await canBind(a.address);
      if (error) {
        return [
          {
            name,
            status: 'failing',
            required: true,
            message: `${a.address} cannot be bound on this host (${error}): mail of pool ${pool.name} sent from it is deferred.`,
            fix: `Add ${a.address} to a network interface of this host, or remove it from the pool (mailsvc ip-pools …, PATCH /v1/ip-pools/${pool.name}).`,
          },
        ];
      }
      let ptr: string[] = [];
      try {
        ptr = (await resolver.resolvePtr(ptrName(a.address))).map((p) => p.replace(/\.$/, '').toLowerCase());
      } catch (err) {
        if (!isNoRecordError(err))
          return [
            {
              name,
              status: 'warning',
              required: false,
              message: `${a.address} can be bound; its PTR could not be looked up: ${(err as Error).message}.`,
              fix: null,
            },
          ];
      }
      if (!ptr.includes(a.ehlo)) {
        return [
          {
            name,
            status: 'warning',
            required: false,
            message: `${a.address} can be bound, but its PTR is ${ptr.length > 0 ? ptr.join(', ') : 'missing'}, not its EHLO name ${a.ehlo}.`,
            fix: `Set the reverse DNS (PTR) of ${a.address} to ${a.ehlo}, and an A/AAAA record ${a.ehlo} -> ${a.address}.`,
          },
        ];
      }
      return [
        {
          name,
          status: 'ok',
          required: true,
          message: `${a.address} can be bound; its PTR is its EHLO name ${a.ehlo}.`,
          fix: null,
        },
      ];
    }),
  );
  return (await Promise.all(checks)).flat();
}
