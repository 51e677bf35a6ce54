import { isDatabaseUnavailable } from './database-availability.js';

/** What pg hands over for a statement the server refused: its SQLSTATE in `code`, as TypeORM wraps it in `driverError`. */
const serverError = (code: string, message: string) => ({ driverError: Object.assign(new Error(message), { code }) });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['57P01', 'terminating connection due to administrator command'],
    ['08006', 'connection failure'],
    ['57014', 'canceling statement due to statement timeout'],
    // A failover: the address leads to a standby not promoted yet, or to the old primary restarted as one.
    ['25006', 'cannot execute INSERT in a read-only transaction'],
  ])('takes %s (%s) for a database that cannot serve now: a 503', (code, message) => {
    expect(isDatabaseUnavailable(serverError(code, message))).toBe(true);
  });

  it.each([
    ['23505', 'duplicate key value violates unique constraint'],
    ['42P01', 'relation "nowhere" does not exist'],
  ])('takes %s (%s) for a fault of the request or of ours, not an outage', (code, message) => {
    expect(isDatabaseUnavailable(serverError(code, message))).toBe(false);
  });

  it('takes a refused connection for an outage', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe(true);
  });
});
