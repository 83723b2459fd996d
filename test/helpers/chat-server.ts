import { createServer, type IncomingMessage, type Server } from 'node:http';

/** A model server speaking the OpenAI chat-completions protocol on loopback: it answers from what the message says. */
export async function startChatServer(answer: (userMessage: string) => { status: number; content?: string }) {
  const requests: Array<{ path: string; headers: IncomingMessage['headers']; body: any }> = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    const { status, content } = answer(body.messages?.[1]?.content ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        status === 200
          ? {
              id: 'chatcmpl-1',
              object: 'chat.completion',
              model: body.model,
              choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
            }
          : { error: { message: 'overloaded' } },
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/v1/chat/completions`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
