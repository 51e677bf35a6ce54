import { ApiQuery } from '@nestjs/swagger';
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX } from '@prospect/contract';

/** What every stream route (an organization's, the instance's) says of its answer and its queries in the API docs. */
export const STREAM_DESCRIPTION = `Events in a stable order, oldest first, after the cursor \`after\` (none: from the oldest kept). \`next\` is the cursor to send as \`after\` next time, the same one when no event came; a cursor never skips or repeats an event, on any replica, and one older than retention just continues. docs/events.md lists the types.`;

export const streamQueries =
  () =>
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): void => {
    ApiQuery({ name: 'after', required: false, description: 'An event id or an earlier answer’s `next`.' })(target, key, descriptor);
    ApiQuery({ name: 'types', required: false, description: 'Comma-separated event types (all when absent).' })(target, key, descriptor);
    ApiQuery({ name: 'limit', required: false, description: `At most this many events (default ${EVENTS_PAGE_DEFAULT}, at most ${EVENTS_PAGE_MAX}).` })(target, key, descriptor);
  };

