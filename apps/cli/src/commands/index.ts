import { apiCommand } from './api.js';
import { loginCommand } from './auth-login.js';
import { logoutCommand } from './auth-logout.js';
import { refreshCommand } from './auth-refresh.js';
import { statusCommand } from './auth-status.js';
import { tokenCommand } from './auth-token.js';
import { switchCommand } from './auth-switch.js';
import { whoamiCommand } from './auth-whoami.js';
import type { Command } from './command.js';
import { eventsCommand } from './events.js';
import { orgListCommand } from './org-list.js';
import { orgSwitchCommand } from './org-switch.js';

/** Every command, by the name typed after `prospect`. */
export const COMMANDS: ReadonlyMap<string, Command> = new Map(
  [loginCommand, whoamiCommand, statusCommand, switchCommand, refreshCommand, tokenCommand, logoutCommand, orgListCommand, orgSwitchCommand, apiCommand, eventsCommand].map((c) => [c.name, c]),
);
