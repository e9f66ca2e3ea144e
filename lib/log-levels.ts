/**
 * The log levels every program accepts (`--log-level`): pino's, from the most to the least verbose, and `silent`.
 * One list, so svc-auth and svc-operator offer the same choices.
 */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
