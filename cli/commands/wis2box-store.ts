/**
 * Reads a wis2box-auth store (`auth(salt, key, topic)` in an SQLite file) within bounds, whatever the file holds.
 * wis2box-auth makes the table with Python's sqlite3, one row per token; a file made to look like one must not make
 * the import run without end or fill memory. So: the file is at most MAX_STORE_BYTES; `auth` must be a plain table
 * (a view, a recursive one say, or a virtual table is refused before any row is read) whose salt, key and topic
 * columns are stored, not generated; SQLite's heap is capped; at most MAX_ROWS rows are read; and no value longer
 * than its bound reaches JavaScript (SQLite measures it and hands over a cut). Every problem is a usage error
 * (exit 2): the file as given cannot be imported, and nothing was written.
 *
 * SQLite is read with sql.js (SQLite compiled to WebAssembly, installed from npm with the package's own files):
 * Node 20 has no node:sqlite, and native bindings download a prebuilt binary at install, which fails here.
 */
import { readFile, stat } from 'node:fs/promises';
import { MAX_SALT_BYTES, MAX_WIS2BOX_TOPIC_CHARS, type Wis2boxRow } from '../../core/index.js';
import { CliError, usageError } from '../errors.js';

/** Larger than any token store (a row is ~150 bytes) by far, small enough to hold in memory. */
const MAX_STORE_BYTES = 64 * 1024 * 1024;
/** Rows read at most: tokens are handed out one partner at a time, and a scope holds at most 1,000. */
const MAX_ROWS = 10_000;
/** SQLite's own heap while reading (page cache, one row): far above what reading a table needs. */
const HEAP_LIMIT_BYTES = 64 * 1024 * 1024;
const COLUMNS = ['salt', 'key', 'topic'] as const;

// One statement per row, every value measured by SQLite and handed over only within its bound.
const ROWS_SQL = `SELECT
  typeof(topic), CASE WHEN typeof(topic) = 'text' THEN length(topic) ELSE 0 END, CASE WHEN typeof(topic) = 'text' THEN substr(topic, 1, ${MAX_WIS2BOX_TOPIC_CHARS + 1}) END,
  typeof(salt), length(salt), CASE WHEN typeof(salt) = 'blob' AND length(salt) <= ${MAX_SALT_BYTES} THEN salt END,
  typeof(key), length(key), CASE WHEN typeof(key) = 'blob' AND length(key) <= ${MAX_SALT_BYTES} THEN key END
  FROM main.auth LIMIT ${MAX_ROWS + 1}`;

type Database = import('sql.js').Database;

export async function readWis2boxStore(file: string): Promise<Wis2boxRow[]> {
  const bytes = await readBounded(file);
  const { default: initSqlJs } = await import('sql.js');
  const SQL = await initSqlJs();
  let db: Database | undefined;
  try {
    db = new SQL.Database(bytes);
    db.exec(`PRAGMA hard_heap_limit = ${HEAP_LIMIT_BYTES}; PRAGMA query_only = ON; PRAGMA trusted_schema = OFF`);
    checkTable(file, db);
    return readRows(file, db);
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw usageError(`${file} is not a wis2box-auth store (an SQLite file with a table auth(salt, key, topic)): ${(e as Error).message}`);
  } finally {
    db?.close();
  }
}

async function readBounded(file: string): Promise<Uint8Array> {
  try {
    const size = (await stat(file)).size;
    if (size > MAX_STORE_BYTES) throw usageError(`${file} holds ${size} bytes: a wis2box-auth store is far smaller (at most ${MAX_STORE_BYTES} bytes are read); nothing was written`);
    return await readFile(file);
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw usageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** `auth` is a stored table with stored salt, key and topic columns; anything else is refused before a row is read. */
function checkTable(file: string, db: Database): void {
  const found = db.exec("SELECT type, sql FROM main.sqlite_master WHERE name = 'auth' COLLATE NOCASE")[0]?.values ?? [];
  const refuse = (what: string) => usageError(`${file} is not a wis2box-auth store: ${what}; nothing was written`);
  if (found.length === 0) throw refuse('it has no table auth(salt, key, topic)');
  const [type, sql] = found[0]! as [string, string | null];
  if (type !== 'table') throw refuse(`its auth is a ${type}, not a table (wis2box-auth keeps its tokens in a table)`);
  if (/^\s*create\s+virtual\b/i.test(sql ?? '')) throw refuse('its auth is a virtual table, not a table');
  const columns = new Map<string, number>();
  for (const [name, hidden] of (db.exec("SELECT name, hidden FROM pragma_table_xinfo('auth')")[0]?.values ?? []) as [string, number][]) {
    columns.set(name.toLowerCase(), hidden);
  }
  for (const c of COLUMNS) {
    if (!columns.has(c)) throw refuse(`its table auth has no column ${c}`);
    if (columns.get(c) !== 0) throw refuse(`the column ${c} of its table auth is generated, not stored`);
  }
}

function readRows(file: string, db: Database): Wis2boxRow[] {
  const stmt = db.prepare(ROWS_SQL);
  const rows: Wis2boxRow[] = [];
  try {
    while (stmt.step()) {
      if (rows.length === MAX_ROWS) throw usageError(`${file} holds more than ${MAX_ROWS} rows in auth: more tokens than a wis2box-auth store is made for (at most ${MAX_ROWS} are imported at once); nothing was written`);
      const [topicType, topicLength, topic, saltType, saltLength, salt, keyType, keyLength, key] = stmt.get() as [string, number, string | null, string, number | null, Uint8Array | null, string, number | null, Uint8Array | null];
      rows.push({
        row: rows.length + 1, topicType, topic, topicLength,
        saltType, salt, saltLength: saltLength ?? 0, keyType, key, keyLength: keyLength ?? 0,
      });
    }
  } finally {
    stmt.free();
  }
  return rows;
}
