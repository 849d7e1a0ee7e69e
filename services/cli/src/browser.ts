import { spawn } from 'node:child_process';
import { cliEnv, type CliEnv } from './cli-config';

/**
 * The command that opens a URL in the person's browser, or undefined when there is no display to
 * open one on (a server over SSH, a container, CI): the URL is printed either way.
 */
export function browserCommand(platform: NodeJS.Platform = process.platform, env: CliEnv = cliEnv()): { file: string; args: (url: string) => string[] } | undefined {
  if (platform === 'darwin') return { file: 'open', args: (url) => [url] };
  // `start` is a cmd builtin; its first quoted argument is the window title, hence the empty one.
  if (platform === 'win32') return { file: 'cmd', args: (url) => ['/c', 'start', '""', url.replace(/&/g, '^&')] };
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY) return undefined;
  return { file: 'xdg-open', args: (url) => [url] };
}

/** Opens the URL, best effort: a missing opener or a failing one changes nothing (the URL is printed). */
export function openBrowser(url: string): boolean {
  const command = browserCommand();
  if (!command) return false;
  try {
    const child = spawn(command.file, command.args(url), { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
    return true;
  } catch {
    return false;
  }
}
