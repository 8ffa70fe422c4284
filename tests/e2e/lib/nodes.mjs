// Scale-out nodes for the e2e suites: `dorm serve` processes as nodes of one shared store,
// and a TCP balancer a test points at whichever node it likes, as a deploy or a failover
// does.
import net from 'node:net';
import { DormProcess } from './dorm_process.mjs';

// A TCP balancer on a loopback port chosen at run time, sending each new connection to
// whichever node `target` names; closed with the test.
export async function startBalancer(t) {
  const sockets = new Set();
  const balancer = { target: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(balancer.target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  balancer.url = new URL(`http://127.0.0.1:${server.address().port}/mcp`);
  return balancer;
}

export async function startNode(t, storage, id, extraArgs = []) {
  const node = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage', storage,
    '--fixtures', 'testing', '--node-id', id, '--lease-ms', '2000', '--lease-renew-ms', '500',
    // Clients resume 1.5 s after a stream drops: by then a killed node's heartbeat is
    // three renewal periods old, and the node they reach waits out its lease.
    '--retry-ms', '1500',
    ...extraArgs,
  ]);
  const line = await node.waitForLine(/^listening on http:\/\//);
  node.url = new URL(line.slice('listening on '.length));
  return node;
}
