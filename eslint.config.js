import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The layering of docs/architecture.md, enforced: lib imports nothing of ours and no I/O; core imports only lib and no I/O;
// no program imports another.
const io = ['fs', 'node:fs', 'fs/promises', 'node:fs/promises', 'http', 'node:http', 'https', 'node:https', 'net', 'node:net',
  'child_process', 'node:child_process', 'dgram', 'node:dgram', 'worker_threads', 'node:worker_threads'];
const layer = (folder, forbidden, extraPaths = []) => ({
  files: [`${folder}/**/*.ts`],
  ignores: ['**/*.test.ts'],
  rules: {
    'no-restricted-imports': ['error', {
      paths: extraPaths,
      patterns: forbidden.map((f) => ({ group: [`**/${f}/*`, `**/${f}`], message: `${folder}/ may not import ${f}/ (docs/architecture.md "Source layout").` })),
    }],
  },
});

/**
 * svc-auth's folders by floor, the ground first: http (the front, answers, pages), imported, sources and options import
 * no other folder of authz/; endpoints and identity only those; telemetry and sign-in those below; pipeline everything
 * but the server that assembles it; server.ts and main.ts stand on top. Each rule repeats the authz/ layer's own
 * forbidden programs, since a later rule for the same files replaces an earlier one.
 */
function authzFloors() {
  const floors = [['http', 'imported', 'sources', 'options.ts'], ['endpoints', 'identity'], ['telemetry', 'sign-in'], ['pipeline', 'args.ts'], ['server.ts'], ['main.ts']];
  const pattern = (name) => (name.endsWith('.ts') ? [`**/authz/${name.replace(/\.ts$/, '.js')}`, `../${name.replace(/\.ts$/, '.js')}`, `./${name.replace(/\.ts$/, '.js')}`] : [`**/authz/${name}/*`, `../${name}/*`, `./${name}/*`]);
  return floors.slice(0, -1).map((floor, i) => {
    const above = floors.slice(i + 1).flat();
    return {
      files: floor.map((name) => (name.endsWith('.ts') ? `authz/${name}` : `authz/${name}/**/*.ts`)),
      ignores: ['**/*.test.ts'],
      rules: {
        'no-restricted-imports': ['error', {
          patterns: [
            ...['operator', 'cli', 'test', 'bench'].map((f) => ({ group: [`**/${f}/*`, `**/${f}`], message: `authz/ may not import ${f}/ (docs/architecture.md "Source layout").` })),
            ...above.map((name) => ({ group: pattern(name), message: `authz/${floor.join(', ')} may not import authz/${name}, a floor above it (docs/architecture.md "svc-auth inside").` })),
          ],
        }],
      },
    };
  });
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', 'coverage/**', 'charts/**', '.stryker-tmp/**', 'test/differential/.legacy/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // lib/ imports nothing of ours: any relative import that leaves lib/ is refused, whatever folder it reaches.
    files: ['lib/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [...io, 'os', 'node:os', 'crypto', 'node:crypto', '@kubernetes/client-node', 'express', 'pino', 'prom-client', 'commander', 'js-yaml', 'jose']
          .map((name) => ({ name, message: 'lib/ holds small generic mechanisms: no I/O but timers, no dependencies.' })),
        patterns: [{ group: ['../*', '../**'], message: 'lib/ may not import anything outside lib/ (docs/architecture.md "Source layout").' }],
      }],
    },
  },
  {
    // One job per function: production code stays readable in one screen (the HTTP head parser is the one exception).
    files: ['{lib,core,k8s,operator,authz,cli}/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 60 }] },
  },
  layer('core', ['k8s', 'operator', 'authz', 'cli', 'test', 'bench'],
    [...io, '@kubernetes/client-node', 'express', 'pino', 'prom-client', 'commander'].map((name) => ({ name, message: 'core/ is pure: no I/O, no Kubernetes, no HTTP.' }))),
  layer('k8s', ['operator', 'authz', 'cli', 'test', 'bench']),
  layer('operator', ['authz', 'cli', 'test', 'bench']),
  layer('authz', ['operator', 'cli', 'test', 'bench']),
  // authz/'s own floors (docs/architecture.md "svc-auth inside"): a folder imports only the floors below it, never up.
  ...authzFloors(),
  layer('cli', ['operator', 'authz', 'test', 'bench']),
);
