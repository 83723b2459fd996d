import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { SMTPServer } from 'smtp-server';
import { SMTPConnection, type SMTPConnectionOptions } from 'smtp-server/lib/smtp-connection.js';

/**
 * smtp-server greets every connection after a fixed 100 ms, to catch clients that talk before
 * the greeting (spam bots, on port 25), with no option to turn it off. Submission clients
 * authenticate before they can send, so on the submission ports the wait buys nothing and
 * caps clients that open one connection per message (PHPMailer, WordPress) at ten
 * connections a second per session.
 *
 * This server greets as soon as the connection is set up. The delay lives in
 * `SMTPConnection.init()`, which `SMTPServer.connect()` calls: both are replaced below, the
 * rest is smtp-server's own code. smtp-server is pinned (package.json) because this leans on
 * its internals (`_setListeners`, `_onError`, `_onClientConnect`);
 * test/integration/smtp-greeting.test.ts fails if an upgrade brings a delay back.
 */
class PromptConnection extends SMTPConnection {
  override init(): void {
    this._setListeners(() => {
      // smtp-server's own connection-limit check, kept as it is.
      const { maxClients } = this._server.options;
      if (maxClients && this._server.connections.size > maxClients) {
        this.send(421, `${this.name} Too many connected clients, try again in a moment`, false);
        return;
      }
      this.connectionReady();
    });
  }
}

export class PromptGreetingServer extends SMTPServer {
  override connect(socket: Socket | TLSSocket, socketOptions?: SMTPConnectionOptions | null): void {
    const connection = new PromptConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on('error', (err: Error) => this._onError(err));
    connection.on('connect', (data: Parameters<SMTPServer['_onClientConnect']>[0]) => this._onClientConnect(data));
    connection.init();
  }
}
