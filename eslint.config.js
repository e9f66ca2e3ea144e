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

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', 'coverage/**', 'charts/**', '.stryker-tmp/**'] },
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
  layer('cli', ['operator', 'authz', 'test', 'bench']),
);
