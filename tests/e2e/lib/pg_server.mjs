// A real PostgreSQL server for an e2e test: initdb into a temporary directory, `postgres`
// on a Unix socket there only (no TCP port), stopped by PID at test end. As root (CI) it
// runs as Debian's `postgres` user, since PostgreSQL refuses root. Binaries from
// DORM_PG_BIN, else /usr/lib/postgresql/15/bin (tools/bootstrap installs postgresql-15).
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

const BIN = process.env.DORM_PG_BIN || '/usr/lib/postgresql/15/bin';
const PORT = 5432; // names the socket file only
const START_MS = 60_000;

function postgresUser() {
  if (userInfo().uid !== 0) return {};
  const id = (flag) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

export async function startPostgres(t) {
  if (!existsSync(join(BIN, 'postgres'))) throw new Error(`no PostgreSQL server in ${BIN} (run tools/bootstrap)`);
  const dir = mkdtempSync(join(tmpdir(), 'dorm-e2e-pg-'));
  const user = postgresUser();
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(BIN, 'initdb'), ['-D', data, '-U', 'dorm', '-A', 'trust', '-E', 'UTF8',
    '--no-sync', '--no-instructions'], { ...user, encoding: 'utf8', timeout: 120_000 });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const server = spawn(join(BIN, 'postgres'), ['-D', data, '-k', dir, '-p', String(PORT),
    '-c', 'listen_addresses='], { ...user, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.setEncoding('utf8').on('data', (c) => { log += c; });
  const exited = new Promise((resolve) => server.on('exit', resolve));
  t.after(async () => {
    try { process.kill(server.pid, 'SIGINT'); } catch { /* gone */ }
    let timer;
    const stopped = await Promise.race([exited.then(() => true),
      new Promise((r) => { timer = setTimeout(() => r(false), 30_000); })]);
    clearTimeout(timer);
    if (!stopped) { try { process.kill(server.pid, 'SIGKILL'); } catch { /* gone */ } }
    rmSync(dir, { recursive: true, force: true });
  });
  // Ready once pg_isready says so (bounded).
  const deadline = Date.now() + START_MS;
  for (;;) {
    const ready = spawnSync(join(BIN, 'pg_isready'), ['-h', dir, '-p', String(PORT), '-U', 'dorm', '-d', 'postgres'],
      { encoding: 'utf8', timeout: 10_000 });
    if (ready.status === 0) break;
    if (server.exitCode !== null) throw new Error(`postgres exited at start: ${log}`);
    if (Date.now() > deadline) throw new Error(`postgres not ready within ${START_MS} ms: ${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // Runs `sql` with psql and returns its rows, each as an array of fields (bounded).
  const query = (sql) => {
    const r = spawnSync(join(BIN, 'psql'), ['-h', dir, '-p', String(PORT), '-U', 'dorm', '-d', 'postgres',
      '-At', '-F', '\t', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`psql failed: ${r.stderr}`);
    return r.stdout.split('\n').filter((line) => line !== '').map((line) => line.split('\t'));
  };
  return { pid: server.pid, uri: `postgres://dorm@/postgres?host=${dir}&port=${PORT}`, query };
}
