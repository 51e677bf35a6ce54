export * from './constants.js';
export * from './schemas.js';
export * from './user-code.js';
export * from './oauth.js';
export * from './text.js';
export * from './identity-providers.js';
export * from './organizations.js';
export * from './webhooks.js';
