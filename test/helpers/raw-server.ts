import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A loopback HTTP server answering with exact bytes, for tests that need a body no real API would send. */
export interface RawServer {
  url: string;
  requests: { url: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 (free port) whose every answer is `handler`'s. */
export async function startRawServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<RawServer> {
  const requests: RawServer['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
