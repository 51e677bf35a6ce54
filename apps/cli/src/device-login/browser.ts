import { readFileSync } from 'node:fs';

/** Browsers that would take over the terminal the login view is drawn in. */
const TERMINAL_BROWSERS = /(^|\/)(lynx|links2?|elinks|w3m|browsh|www-browser|carbonyl)(\s|$)/;

export interface BrowserDecision {
  open: boolean;
  /** Why not, said to the person as a hint. */
  reason?: string;
  /** On WSL, Windows' browser through wslview. */
  viaWslview?: boolean;
}

function isWsl(platform: NodeJS.Platform, env: NodeJS.ProcessEnv): boolean {
  if (platform !== 'linux') return false;
  if (env.WSL_DISTRO_NAME || env.WSL_INTEROP) return true;
  try {
    return /microsoft/i.test(readFileSync('/proc/version', 'utf8'));
  } catch {
    return false;
  }
}

/** Opening a browser only helps a person at this machine's own desktop. */
export function decideBrowser(options: { interactive: boolean; requested: boolean; env: NodeJS.ProcessEnv; platform: NodeJS.Platform }): BrowserDecision {
  const { env, platform } = options;
  if (!options.requested) return { open: false, reason: '--no-browser' };
  if (!options.interactive) return { open: false, reason: 'not an interactive terminal' };
  if (env.SSH_CONNECTION || env.SSH_CLIENT || env.SSH_TTY) return { open: false, reason: 'connected over SSH: open the link on your own machine' };
  if (env.BROWSER && TERMINAL_BROWSERS.test(env.BROWSER)) return { open: false, reason: `BROWSER is a terminal browser (${env.BROWSER})` };
  if (isWsl(platform, env)) return { open: true, viaWslview: true };
  if (platform === 'darwin' || platform === 'win32') return { open: true };
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return { open: true };
  return { open: false, reason: 'no desktop to open a browser on' };
}

/** Starts the browser and returns without waiting for it; resolves to an error text or null. */
export async function openBrowser(url: string, decision: BrowserDecision): Promise<string | null> {
  try {
    if (decision.viaWslview) {
      // Loaded here: child_process costs the other commands' startup time.
      const { spawn } = await import('node:child_process');
      await new Promise<void>((resolve, reject) => {
        const child = spawn('wslview', [url], { stdio: 'ignore', detached: true });
        child.once('error', reject);
        child.once('spawn', () => {
          child.unref();
          resolve();
        });
      });
    } else {
      const { default: open } = await import('open');
      const child = await open(url, { wait: false });
      child.once('error', () => undefined);
      child.unref();
    }
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
