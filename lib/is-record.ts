/** A plain object (not null, not an array): what a parsed JSON or YAML document's mapping is. */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
