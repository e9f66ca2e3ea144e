import { spawnSync } from 'node:child_process';

/**
 * A wis2box-auth token store made exactly as wis2box-auth makes it (wis2box_auth/base.py): Python's sqlite3,
 * `CREATE TABLE IF NOT EXISTS auth (salt text PRIMARY KEY, key text NOT NULL, topic text NOT NULL)`, and per
 * token `salt = os.urandom(24)`, `key = hashlib.pbkdf2_hmac('sha256', token.encode(), salt, 100000)`, inserted
 * as bytes (sqlite3 stores them as blobs), one connection per token as `add` opens one. The tokens go to Python
 * on stdin, never in its arguments, and nothing of them is printed. python3 is required: a missing one throws
 * (never a skip).
 */
const SCRIPT = `
import hashlib, json, os, sqlite3, sys
db = sys.argv[1]
conn = sqlite3.connect(db)
conn.execute('CREATE TABLE IF NOT EXISTS auth (salt text PRIMARY KEY, key text NOT NULL, topic text NOT NULL)')
conn.commit()
conn.close()
for row in json.load(sys.stdin):
    salt = os.urandom(24)
    pw_hash = hashlib.pbkdf2_hmac('sha256', row['token'].encode(), salt, 100000)
    conn = sqlite3.connect(db)
    conn.execute('INSERT INTO auth (salt, key, topic) VALUES (:salt, :key, :topic)', {'salt': salt, 'key': pw_hash, 'topic': row['topic']})
    conn.commit()
    conn.close()
`;

export interface StoreRow {
  readonly token: string;
  readonly topic: string;
}

export function makeWis2boxAuthStore(file: string, rows: readonly StoreRow[]): void {
  const r = spawnSync('python3', ['-c', SCRIPT, file], { input: JSON.stringify(rows), encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw new Error(`python3 is needed to make a wis2box-auth store (apt-get install -y python3): ${r.error.message}`);
  // Python's own error lines name no token (they are only on stdin); the status is what matters.
  if (r.status !== 0) throw new Error(`making the wis2box-auth store failed (exit ${r.status ?? r.signal}): ${r.stderr.split('\n').slice(-3).join(' ')}`);
}

/**
 * An SQLite file made by Python's sqlite3 from SQL statements (stores no wis2box-auth would write: views, NULL
 * topics, generated columns, too many rows). Nothing secret goes in: crafted rows carry random salts and keys.
 */
export function makeSqliteFile(file: string, script: string): void {
  const code = 'import sqlite3, sys\nconn = sqlite3.connect(sys.argv[1])\nconn.executescript(sys.stdin.read())\nconn.commit()\nconn.close()\n';
  const r = spawnSync('python3', ['-c', code, file], { input: script, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw new Error(`python3 is needed to make an SQLite file (apt-get install -y python3): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`making the SQLite file failed (exit ${r.status ?? r.signal}): ${r.stderr.split('\n').slice(-3).join(' ')}`);
}
