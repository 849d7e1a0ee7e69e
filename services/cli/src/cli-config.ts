/**
 * The CLI's configuration from its environment, the one module of the CLI that reads
 * `process.env`. It is a client on the user's machine, so its environment is its configuration:
 * docs/cli.md lists these variables and their precedence.
 */
export interface CliEnv {
  /** API base URL, after `--url` and before the saved login's. */
  SERVICE_URL?: string;
  /** An access token; replaces `svc login` (and is required by `svc mcp`). */
  SERVICE_TOKEN?: string;
  /** `svc mcp`'s base URL override (SPEC: the local MCP server's variable). */
  SERVICE_API_URL?: string;
  /** Where the config file goes (`$XDG_CONFIG_HOME/svc/config.json`); else `~/.config`. */
  XDG_CONFIG_HOME?: string;
  /** Whether a display exists to open a browser on (`svc login`). */
  DISPLAY?: string;
  WAYLAND_DISPLAY?: string;
}

const NAMES = ['SERVICE_URL', 'SERVICE_TOKEN', 'SERVICE_API_URL', 'XDG_CONFIG_HOME', 'DISPLAY', 'WAYLAND_DISPLAY'] as const satisfies readonly (keyof CliEnv)[];

/** The variables of {@link CliEnv} from the process's environment, and nothing else of it. */
export function cliEnv(source: Readonly<Record<string, string | undefined>> = process.env): CliEnv {
  const env: CliEnv = {};
  for (const name of NAMES) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
