// The popup: shows who is signed in, and the button that changes it. All the work is the service worker's.
const api = globalThis.browser ?? globalThis.chrome;
const $ = (id) => document.getElementById(id);

function show({ user, error }) {
  $('status').textContent = user ? `Signed in as ${user.name} (${user.email})` : 'Not signed in';
  $('sign-in').hidden = Boolean(user);
  $('sign-out').hidden = !user;
  $('error').hidden = !error;
  $('error').textContent = error ?? '';
}

const ask = (type) => api.runtime.sendMessage({ type }).then(show, (err) => show({ error: err.message }));

$('sign-in').addEventListener('click', () => ask('signIn'));
$('sign-out').addEventListener('click', () => ask('signOut'));
ask('status');
