/** Every migration, in order. Each is a reviewed SQL change with an exact `down()`. */
export const MIGRATIONS: Function[] = [];
