// The loopback HTTP service of bench/systems.js's `http` system, in a process of its own: PUT /<id> stores a
// row's status, GET /<id> reads the row back (404 and null when absent). Tells its parent its port over IPC.
import http from 'node:http';

const rows = new Map();
const server = http.createServer((req, res) => {
  const id = req.url.slice(1);
  if (req.method === 'PUT') {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      rows.set(id, { id, status: JSON.parse(body).status, version: (rows.get(id)?.version ?? 0) + 1 });
      res.end('{"ok":true}');
    });
    return;
  }
  const row = rows.get(id);
  res.statusCode = row ? 200 : 404;
  res.end(row ? JSON.stringify(row) : 'null');
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
// The parent's exit (or kill) ends the service.
process.on('disconnect', () => process.exit(0));
