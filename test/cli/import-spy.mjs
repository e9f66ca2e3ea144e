// `node --import ./test/cli/import-spy.mjs ...`: appends every module URL the program resolves to $SVC_IMPORT_LOG,
// so a test can check what `svc --help` loads (and that client-node is not among it).
import { register } from 'node:module';

const hooks = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (process.env.SVC_IMPORT_LOG) appendFileSync(process.env.SVC_IMPORT_LOG, r.url + '\\n');
  return r;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
