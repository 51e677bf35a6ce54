import { createServer } from 'node:net';

/**
 * Says, in one line, that PORT is taken and how to choose another: before the database is opened,
 * the migrations run and a setup link printed for a server that would never serve (issue #49: on
 * the embedded database that took 35 s, then failed on `listen`).
 */
export function portInUse(host: string, port: number): string {
  return `port ${port} is in use on ${host}: another process listens there. Stop it, or set PORT to a free port (PORT=3001 npm start; PORT=0 picks one).`;
}

/**
 * Whether `listen` on PORT would succeed, asked by listening and closing at once (PORT 0 always
 * would). The real `listen` comes later and may still lose a race to another process: main.ts
 * names the port then too.
 * @throws Error with portInUse's line when another process holds the port; the listen error otherwise (EACCES for a port below 1024).
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new Error(portInUse(host, port)) : err));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
