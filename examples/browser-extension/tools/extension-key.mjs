#!/usr/bin/env node
// Pins the extension's id: prints a "key" for manifest.json (the public half of a new RSA key)
// and the id Chrome derives from it, so the redirect URI registered with Prospect stays the same
// wherever the extension is loaded. Keep the private half (key.pem) out of version control: only
// the Chrome Web Store needs it, and it makes its own.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';

const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const der = publicKey.export({ type: 'spki', format: 'der' });
// Chrome's extension id: the first 128 bits of the key's SHA-256, each hex digit 0-f written a-p.
const id = [...createHash('sha256').update(der).digest('hex').slice(0, 32)].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
writeFileSync('key.pem', privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
process.stdout.write(
  [
    `"key": "${der.toString('base64')}"`,
    '',
    `Extension id:   ${id}`,
    `Redirect URI:   https://${id}.chromiumapp.org/`,
    `Allowed origin: chrome-extension://${id}`,
    '',
  ].join('\n'),
);
