import type { CommandContext } from '../context.js';

/** A meow flag definition (kept structural so this module loads nothing). */
export interface FlagSpec {
  type: 'string' | 'boolean' | 'number';
  shortFlag?: string;
  /** Repeatable: the value is an array of every occurrence. */
  isMultiple?: boolean;
  default?: unknown;
}

/** Every command is a small declaration plus a `run`; the dispatcher does the rest. */
export interface Command {
  name: string;
  description: string;
  /** Usage and options, shown by `--help`. */
  usage: string;
  flags: Record<string, FlagSpec>;
  /** How many positional arguments it takes (default none): more is a usage error. */
  positional?: number;
  /** True: the auth guard runs first and `ctx.session` is set. */
  requiresAuth: boolean;
  run(ctx: CommandContext): Promise<number | void>;
}

export const apiUrlFlag: Record<string, FlagSpec> = { apiUrl: { type: 'string' } };
