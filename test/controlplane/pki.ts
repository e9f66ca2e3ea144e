// Test PKI with the openssl CLI: a CA, the apiserver's serving certificate, client certificates (the user is the CN,
// groups are O entries, as kube-apiserver reads them) and the service-account signing key pair. EC P-256 keys: fast.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertFiles {
  cert: string;
  key: string;
}

export interface TestPki {
  dir: string;
  ca: CertFiles;
  serving: CertFiles;
  admin: CertFiles;
  serviceAccount: { publicKey: string; privateKey: string };
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`openssl ${args[0]} failed: ${err.stderr?.toString().trim() || err.message}`, { cause: e });
  }
}

function ecKey(path: string, cwd: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path], cwd);
}

// Subject components are escaped for openssl's "/type=value" syntax.
function subject(cn: string, orgs: string[] = []): string {
  const esc = (v: string) => v.replace(/[\\/,+=]/g, (c) => `\\${c}`);
  return `${orgs.map((o) => `/O=${esc(o)}`).join('')}/CN=${esc(cn)}`;
}

let serial = 0;
function sign(dir: string, ca: CertFiles, name: string, subj: string, ext: string, days = 7): CertFiles {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const extFile = join(dir, `${name}.ext`);
  ecKey(key, dir);
  openssl(['req', '-new', '-key', key, '-subj', subj, '-out', csr], dir);
  writeFileSync(extFile, ext);
  serial += 1;
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', `0x${Date.now().toString(16)}${serial.toString(16).padStart(4, '0')}`,
    '-days', String(days), '-sha256', '-extfile', extFile, '-out', cert], dir);
  return { cert, key };
}

export function createPki(dir: string): TestPki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca: CertFiles = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  ecKey(ca.key, dir);
  openssl(['req', '-x509', '-new', '-key', ca.key, '-subj', '/CN=svc-test-ca', '-days', '7', '-sha256', '-out', ca.cert,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-addext', 'subjectKeyIdentifier=hash'], dir);
  const serving = sign(dir, ca, 'apiserver', '/CN=kube-apiserver', [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    // 10.0.0.1 is the first address of --service-cluster-ip-range: the apiserver registers it for the kubernetes Service.
    'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc',
    '',
  ].join('\n'));
  const admin = clientCert(dir, ca, 'admin', 'admin', ['system:masters']);
  const saKey = join(dir, 'sa.key');
  const saPub = join(dir, 'sa.pub');
  ecKey(saKey, dir);
  openssl(['pkey', '-in', saKey, '-pubout', '-out', saPub], dir);
  return { dir, ca, serving, admin, serviceAccount: { publicKey: saPub, privateKey: saKey } };
}

/** A client certificate for `user` in `groups`, signed by the test CA (kube-apiserver's x509 authenticator). */
export function clientCert(dir: string, ca: CertFiles, fileName: string, user: string, groups: string[]): CertFiles {
  return sign(dir, ca, fileName, subject(user, groups), [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=clientAuth',
    '',
  ].join('\n'));
}

export function readPem(path: string): string {
  return readFileSync(path, 'utf8');
}
