// The domain, pure and I/O-free (docs/architecture.md): everything svc-auth, the operator and the CLI share.
export * from './result.js';
export * from './scope.js';
export * from './scope-state.js';
export * from './token.js';
export * from './subject.js';
export * from './protected-scope.js';
export * from './manifest.js';
export * from './manifest-file.js';
export * from './snapshot.js';
export * from './token-table.js';
export * from './access-index.js';
export * from './normalize.js';
export * from './credentials.js';
export * from './jwt-shape.js';
export * from './imported-hash.js';
export * from './imported-decision.js';
export * from './decide.js';
