// Every svc auth command, flag and output format on the manifest-directory backend (test/cli/suite.ts).
import { afterAll } from '@jest/globals';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dumpManifests, parseManifests, type ProtectedScope } from '../../core/index.js';
import { allText, dirState, removeDir, tempDir } from '../../test/cli/harness.js';
import { runSuite } from '../../test/cli/suite.js';

const dirs: string[] = [];
let dir = '';
afterAll(() => dirs.forEach(removeDir));

runSuite({
  name: 'directory',
  fresh: async () => {
    dir = tempDir();
    dirs.push(dir);
    return ['--dir', dir];
  },
  state: async () => dirState(dir),
  objects: async () => {
    const out: { name: string; spec: unknown }[] = [];
    for (const [name, text] of Object.entries(dirState(dir))) {
      if (name.startsWith('.')) continue;
      const docs = parseManifests(text);
      if (!docs.ok) throw new Error(docs.error);
      for (const d of docs.value as ProtectedScope[]) out.push({ name: d.metadata.name, spec: d.spec });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : 1));
  },
  // Hand-written objects share one multi-document file, as people write them.
  put: async (object) => {
    const path = join(dir, 'hand-written.yaml');
    const before = existsSync(path) ? `${readFileSync(path, 'utf8')}---\n` : '# written by hand\n';
    writeFileSync(path, before + dumpManifests([object]));
  },
  dump: async () => allText(dir),
  where: () => `directory ${dir}`,
  missingStoreArgs: () => ['--dir', join(dir, 'missing')],
});
