// The service worker: the popup asks, this answers (tokens never leave the worker and its storage).
import { signIn, signOut, whoAmI } from './oauth.js';

const api = globalThis.browser ?? globalThis.chrome;

const actions = {
  status: async () => ({ user: await whoAmI() }),
  signIn: async () => {
    await signIn({ interactive: true });
    return { user: await whoAmI() };
  },
  signOut: async () => {
    await signOut();
    return { user: undefined };
  },
};

api.runtime.onMessage.addListener((message, _sender, respond) => {
  const action = actions[message?.type];
  if (!action) return false;
  action().then(respond, (err) => respond({ error: err.message ?? String(err) }));
  return true; // answers asynchronously
});
