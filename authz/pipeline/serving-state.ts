// svc-auth's serving state: the decision index in service, swapped whole on a reload, and whether it drains.
import type { AccessIndex } from '../../core/index.js';

/**
 * svc-auth's serving state (docs/GLOSSARY.md): the decision index in service and whether the server is draining.
 * The auth endpoints read `index` once per request; a reload replaces it whole (one assignment), so a request never
 * sees half of one snapshot and half of another.
 */
export class ServingState {
  index: AccessIndex | null = null;
  draining = false;
  /** When the index in service was loaded (ms since the epoch); null before the first load. */
  loadedAt: number | null = null;

  get ready(): boolean {
    return this.index !== null && !this.draining;
  }
}
