// Passkeys on the pages that offer them (sign-in, its second step, the security page): a button
// with data-passkey="<route>" asks <route>/options for the ceremony, lets the browser run it
// (@simplewebauthn/browser), posts the result to <route> and follows the answer's `next`.
// Without WebAuthn in the browser the buttons stay hidden.
(() => {
  const webauthn = window.SimpleWebAuthnBrowser;
  if (!webauthn || !webauthn.browserSupportsWebAuthn()) return;
  const csrf = () => document.querySelector('input[name="_csrf"]')?.value ?? '';

  async function post(url, fields) {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf() },
      body: new URLSearchParams(fields),
    });
    const body = await res.json().catch(() => ({}));
    if (body.confirmAt) location.assign(body.confirmAt); // sudo mode lapsed: confirm, then come back
    if (!res.ok) throw new Error(body.message || 'Something went wrong. Please try again.');
    return body;
  }

  for (const box of document.querySelectorAll('[data-passkey-box]')) box.hidden = false;
  for (const button of document.querySelectorAll('[data-passkey]')) {
    const error = button.parentElement.querySelector('[data-passkey-error]');
    button.addEventListener('click', async () => {
      const route = button.dataset.passkey;
      const register = button.dataset.passkeyMode === 'register';
      button.disabled = true;
      if (error) error.hidden = true;
      try {
        const optionsJSON = await post(`${route}/options`, {});
        const response = register ? await webauthn.startRegistration({ optionsJSON }) : await webauthn.startAuthentication({ optionsJSON });
        const fields = { response: JSON.stringify(response) };
        if (register) fields.name = document.getElementById('passkey-name')?.value ?? '';
        if (button.dataset.passkeyNext) fields.next = button.dataset.passkeyNext;
        location.assign((await post(route, fields)).next);
      } catch (err) {
        if (error) {
          error.textContent = err?.name === 'NotAllowedError' ? 'No passkey was used: the browser’s window was closed or timed out.' : err.message;
          error.hidden = false;
        }
        button.disabled = false;
      }
    });
  }
})();
