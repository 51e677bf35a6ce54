import { writeFile } from 'node:fs/promises';
import { CliError, FileSystemError } from '../src/errors.js';

/** An error as node:fs throws it. */
const fsError = (code: string, syscall: string, path: string) => Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path, errno: -1 });

describe('FileSystemError: what the machine refused, never "a bug"', () => {
  it.each([
    ['EACCES', 'open', 'permission denied'],
    ['EPERM', 'mkdir', 'operation not permitted'],
    ['EROFS', 'mkdir', 'the file system is read-only'],
    ['ENOSPC', 'write', 'the disk is full'],
    ['EDQUOT', 'write', 'the disk quota is used up'],
    ['EFBIG', 'write', 'the file size limit is reached'],
    ['ENOTDIR', 'mkdir', 'part of the path is a file, not a directory'],
    ['EISDIR', 'open', 'it is a directory'],
    ['EEXIST', 'mkdir', 'it is a file, not a directory'],
  ])('%s (%s) is one sentence naming the path', (code, syscall, reason) => {
    const err = FileSystemError.from(fsError(code, syscall, '/home/ada/.config/prospect'));
    expect(err).toBeInstanceOf(CliError);
    expect(err).toMatchObject({ path: '/home/ada/.config/prospect', reason, exitCode: 1, hint: undefined });
    expect(err!.message).toBe(`Cannot write to /home/ada/.config/prospect: ${reason}.`);
  });

  it('names the path it is given instead of the one in the error (the session file, not its temp file)', () => {
    const err = FileSystemError.from(fsError('ENOSPC', 'write', '/c/.auth-session.json.1.tmp'), '/c/auth-session.json');
    expect(err!.message).toBe('Cannot write to /c/auth-session.json: the disk is full.');
  });

  it('reads a real ENOSPC from node (writing /dev/full), which carries no path', async () => {
    const real = await writeFile('/dev/full', 'x').catch((e: unknown) => e);
    expect((real as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(FileSystemError.from(real)!.message).toBe('Cannot write a file: the disk is full.');
    expect(FileSystemError.from(real, '/c/auth-session.json')!.message).toBe('Cannot write to /c/auth-session.json: the disk is full.');
  });

  it.each([
    ['a bug', new TypeError('x is undefined')],
    ['a network error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' })],
    ['an existing file opened exclusively', fsError('EEXIST', 'open', '/c/x')],
    ['not an error at all', 'boom'],
  ])('leaves %s alone', (_, err) => {
    expect(FileSystemError.from(err)).toBeUndefined();
  });
});
