import { Resolver } from 'node:dns';
import express from 'express';
import { z } from 'zod';

/**
 * How a variable's text becomes a setting's value: the schemas the settings table (settings.ts)
 * is written with, each with the one-line message a wrong value gets.
 */

export const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const seconds = (fallback: number) =>
  z.coerce
    .number({ error: 'must be a whole number of seconds' })
    .int('must be a whole number of seconds')
    .positive('must be greater than 0')
    .default(fallback);

/**
 * A Postgres server's URL, with one host. node-postgres (pg 8) connects to one host and ignores
 * `target_session_attrs`: a libpq-style list of hosts would be one unresolvable name (or not a
 * URL at all), and the parameter a promise nothing keeps. A failover is followed by one address
 * that moves with the primary (docs/operations.md, "A database failover").
 */
export const postgresUrl = z
  .string()
  .trim()
  .refine((v) => /^postgres(ql)?:\/\/.+/.test(v), { error: 'must be a postgres:// URL', abort: true })
  .refine((v) => !namesSeveralHosts(v), {
    error: 'names several hosts: node-postgres connects to one; give the one address that follows the primary (a managed endpoint, a proxy): docs/operations.md, "A database failover"',
    abort: true,
  })
  .refine((v) => URL.canParse(v), { error: 'must be a postgres:// URL', abort: true })
  .refine((v) => !new URL(v).searchParams.has('target_session_attrs'), {
    error: 'sets target_session_attrs, which node-postgres ignores: give the one address that follows the primary (a managed endpoint, a proxy): docs/operations.md, "A database failover"',
  });

/** `host1,host2` in the URL's authority (after any user info) or in a `host=` parameter. */
function namesSeveralHosts(url: string): boolean {
  const authority = url.replace(/^postgres(ql)?:\/\//, '').split(/[/?#]/)[0]!;
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  const hostParam = /[?&]host=([^&#]*)/.exec(url)?.[1] ?? '';
  return hosts.includes(',') || decodeURIComponent(hostParam).includes(',');
}

export const httpUrl = z
  .string()
  .trim()
  .refine((v) => /^https?:\/\/[^/]/.test(v) && URL.canParse(v), 'must be an http:// or https:// URL')
  .transform((v) => v.replace(/\/+$/, ''));

/**
 * Which proxies' X-Forwarded-* headers to believe, in Express's own syntax: `true`, `false`, a
 * hop count, or a comma-separated list of addresses, subnets and the names `loopback`,
 * `linklocal`, `uniquelocal`. Default `loopback`: a TLS terminator on the same machine.
 * Checked by Express itself (its proxy-addr compiles the list), so what passes here is
 * what the app can be set to, rather than a start that fails later without naming it.
 */
export const trustProxy = z
  .string()
  .trim()
  .transform((v): boolean | number | string => (v === 'false' ? false : v === 'true' ? true : /^\d+$/.test(v) ? Number(v) : v))
  .refine(
    acceptedByExpress,
    'must be true, false, a hop count, or a comma-separated list of addresses, subnets (10.0.0.0/8) and loopback, linklocal or uniquelocal',
  );

function acceptedByExpress(trustProxy: boolean | number | string): boolean {
  try {
    express().set('trust proxy', trustProxy);
    return true;
  } catch {
    return false;
  }
}

export const wholeNumber = (fallback: number, unit = 'a whole number') =>
  z.coerce.number({ error: `must be ${unit}` }).int(`must be ${unit}`).positive('must be greater than 0').default(fallback);

/** One setting: the environment variable it is read from, and its schema with its default. */
export const setting = <const Name extends string, S extends z.ZodType>(env: Name, schema: S) => ({ env, schema });

/**
 * DNS servers as Node's resolver takes them: a comma-separated list of IP addresses, each with an
 * optional port (`10.0.0.2`, `10.0.0.2:5353`, `[2001:db8::1]:53`). Checked by Node itself
 * (Resolver.setServers), so what passes here is what the resolver will use; host names are refused
 * there, as a resolver cannot ask a name server it must first resolve.
 */
export const dnsServers = z
  .string()
  .trim()
  .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
  .refine((servers) => servers.length > 0 && acceptedByResolver(servers), 'must be a comma-separated list of IP addresses, each with an optional port (10.0.0.2, 10.0.0.2:5353, [::1]:53)');

function acceptedByResolver(servers: string[]): boolean {
  try {
    new Resolver().setServers(servers);
    return true;
  } catch {
    return false;
  }
}
