/** Requests carry small JSON documents or forms; anything bigger is a mistake or an attack. */
export const BODY_LIMIT = '16kb';
