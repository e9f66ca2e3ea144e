// TCP relay from the bridge address to the loopback kube-apiserver (see node.ts): pods reach the API through the
// `kubernetes` Service, whose EndpointSlice names this relay. It runs as its own process so that nothing the test
// process does synchronously (spawnSync of helm --wait, of kubectl exec running the CLI in a pod) stalls the pods'
// API traffic. Arguments: <listen host> <listen port> <target host> <target port>.
import { createConnection, createServer } from 'node:net';

const [listenHost, listenPort, targetHost, targetPort] = process.argv.slice(2);
const server = createServer((client) => {
  const upstream = createConnection({ host: targetHost, port: Number(targetPort) });
  client.pipe(upstream).pipe(client);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', end);
  upstream.on('error', end);
});
server.on('error', (e) => {
  process.stderr.write(`apiserver-relay: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(listenPort), listenHost, () => process.stdout.write(`relaying ${listenHost}:${listenPort} to ${targetHost}:${targetPort}\n`));
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
