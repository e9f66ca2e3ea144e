/**
 * Errors the CLI reports as one line on stderr. Exit codes (docs/cli.md): 0 ok, 1 a failed operation (and
 * has-access-topic's "denied"), 2 a usage error. Messages never contain a token value: at most its id.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Bad flags or arguments: exit 2, nothing touched. */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT_USAGE);
}

/** The operation was attempted and failed (or was refused): exit 1, the store unchanged. */
export function failure(message: string): CliError {
  return new CliError(message, EXIT_FAILED);
}
