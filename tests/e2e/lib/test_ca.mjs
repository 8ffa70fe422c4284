// A certificate authority for one test, made with the openssl command line: a CA
// certificate and leaf certificates it signs for the subject alternative names a test
// asks for (e.g. IP:127.0.0.1, or a DNS name the server is not reached by). Everything
// lives in the test's temporary directory and is valid for a day.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function openssl(args, cwd) {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
}

const P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export class TestCa {
  constructor(dir) {
    this.dir = dir;
    this.certFile = join(dir, 'ca.pem');
    openssl(['req', '-x509', ...P256, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1',
      '-subj', '/CN=dorm test CA', '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign'], dir);
  }

  // A leaf certificate for `names` (subjectAltName entries): {key, cert} PEM text, as
  // node:https wants them.
  issue(name, names) {
    writeFileSync(join(this.dir, `${name}.ext`), `subjectAltName=${names.join(',')}\n`);
    openssl(['req', ...P256, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], this.dir);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
      '-days', '1', '-out', `${name}.pem`, '-extfile', `${name}.ext`], this.dir);
    return {
      key: readFileSync(join(this.dir, `${name}.key`)),
      cert: readFileSync(join(this.dir, `${name}.pem`)),
    };
  }
}
