import type { Db } from '../store/infra/db.js';
import { findWorkflowVersion } from '../store/workflows.js';
import { definitionOf, type Definition } from '../services/workflows/definition.js';

const CACHE_SIZE = 500;

/**
 * Definitions by version id. A version never changes once saved, so what was read once stays
 * true; the cache is bounded. `db` may be a transaction: on SQLite, a read outside the open
 * transaction would wait for it to end.
 */
export class DefinitionCache {
  private readonly entries = new Map<string, Definition>();

  async get(db: Db, versionId: string): Promise<Definition> {
    const hit = this.entries.get(versionId);
    if (hit) return hit;
    const row = await findWorkflowVersion(db, versionId);
    if (!row) throw new Error(`workflow version ${versionId} not found`);
    const definition = definitionOf(row);
    if (this.entries.size >= CACHE_SIZE) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(versionId, definition);
    return definition;
  }
}
