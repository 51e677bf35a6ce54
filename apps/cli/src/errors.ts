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

/**
 * What the machine refused, in words: these are facts about the disk or the directory
 * (read-only, full, not ours), never a bug in prospect.
 */
const FILE_SYSTEM_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EFBIG: 'the file size limit is reached',
  ENOTDIR: 'part of the path is a file, not a directory',
  EISDIR: 'it is a directory',
  ENAMETOOLONG: 'the name is too long',
  ELOOP: 'too many symbolic links',
  EIO: 'an input/output error',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
};

/** A file or directory the machine would not let prospect use: one sentence with the path, exit 1. */
export class FileSystemError extends CliError {
  constructor(
    readonly path: string | undefined,
    readonly reason: string,
  ) {
    super(path ? `Cannot write to ${path}: ${reason}.` : `Cannot write a file: ${reason}.`);
  }

  /** The error said in words when the machine caused it, else undefined. `path` replaces the one in the error (a temp file's, say). */
  static from(err: unknown, path?: string): FileSystemError | undefined {
    if (err instanceof FileSystemError) return path === undefined ? err : new FileSystemError(path, err.reason);
    const { code, syscall, path: errPath } = (err ?? {}) as NodeJS.ErrnoException;
    // mkdir of a path that is a file: recursive mkdir says EEXIST.
    const reason = code === 'EEXIST' && syscall === 'mkdir' ? 'it is a file, not a directory' : code ? FILE_SYSTEM_REASONS[code] : undefined;
    return reason ? new FileSystemError(path ?? errPath, reason) : undefined;
  }
}
