/** Connections to a Postgres server in each replica's pool: enough to keep 2 cores busy, few enough for many replicas. */
export const SERVER_POOL_SIZE = 10;

/**
 * What one serving replica holds on the Postgres server at most: its pool, and the direct
 * connection its revocation listener keeps (LISTEN). Replicas × this must fit the server's
 * max_connections less its superuser_reserved_connections (100 − 3 by default), or PgBouncer goes
 * in front (docs/operations.md: How many connections).
 */
export const SERVER_CONNECTIONS_PER_REPLICA = SERVER_POOL_SIZE + 1;
