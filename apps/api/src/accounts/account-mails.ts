import { composeMail, type Mail } from '../mail/mailer.js';

/** The mail that tells the owner their password changed, however it was changed, and what to do if it was not them. */
export function passwordChangedMail(
  account: { email: string; name: string },
  site: string,
  change: { how: string; ip: string | null; cliTokensRevoked: boolean },
): Mail {
  return composeMail(account.email, 'Your Prospect password was changed', {
    paragraphs: [
      `Hello ${account.name},`,
      `The password of your Prospect account at ${site} was just changed ${change.how}${change.ip ? ` from the address ${change.ip}` : ''}. Browsers, CLI sessions and apps signed in to it were signed out${change.cliTokensRevoked ? ', and every CLI token was revoked' : ''}.`,
      'If it was not you, reset your password at once and tell your administrator.',
    ],
    link: { url: `${site}/password/forgot`, label: 'Reset your password' },
  });
}

/** The last mail to a deleted account's address: it happened, and whom to tell if it was not them. */
export function accountDeletedMail(account: { email: string; name: string }, site: string, ip: string | null): Mail {
  return composeMail(account.email, 'Your Prospect account was deleted', {
    paragraphs: [
      `Hello ${account.name},`,
      `Your Prospect account at ${site} was just deleted from its account page${ip ? ` from the address ${ip}` : ''}, with every CLI token and browser session it had. Your name and this address are erased from it.`,
      'If it was not you, tell your administrator at once: whoever did it knew your password.',
    ],
  });
}
