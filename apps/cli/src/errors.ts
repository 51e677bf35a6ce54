/** Exit codes of every command (DESIGN: 0 ok, 1 failure, 2 usage, 4 auth required, 130 interrupted). */
export const EXIT = { ok: 0, failure: 1, usage: 2, authRequired: 4, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * An expected failure: the user sees its message (and hint) as one clean
 * line, never a stack trace. Anything else that escapes is a bug.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.failure,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }

  /** True once the message is on screen (the login view draws its own failures). */
  shown = false;
  markShown(): this {
    this.shown = true;
    return this;
  }
}

export const usageError = (message: string, hint?: string) => new CliError(message, EXIT.usage, hint);
export const authRequired = (message: string, hint?: string) => new CliError(message, EXIT.authRequired, hint);
