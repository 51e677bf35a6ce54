/** Every TypeORM entity of the service; listed explicitly (no globs under ESM). */
export const ENTITIES: Function[] = [];
