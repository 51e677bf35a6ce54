import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The CLI signs in through the browser too (issue #48, `prospect auth:login --web`): its built-in
 * client `prospect-cli` gets the loopback redirect of RFC 8252 §7.3, `http://127.0.0.1/callback`,
 * which the authorization endpoint matches on any port (checkRedirectUri). It stays a public
 * client: PKCE protects its codes. Being built in, it is first party: no consent page
 * (AuthorizationService.nextStep), and no `admin` through this door (checkScope).
 */
export class CliLoopbackRedirect1795400000037 implements MigrationInterface {
  name = 'CliLoopbackRedirect1795400000037';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`UPDATE oauth_clients SET redirect_uris = ARRAY['http://127.0.0.1/callback'] WHERE id = 'prospect-cli'`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`UPDATE oauth_clients SET redirect_uris = '{}' WHERE id = 'prospect-cli'`);
  }
}
