import { runTool, ToolError } from './run-tool';

/** The local tools found at start-up; a missing one is undefined. Binaries are run by name. */
export interface LocalTools {
  espeak?: string;
  ffmpeg?: string;
  ffprobe?: string;
  tesseract?: string;
  /** Languages tesseract has data for (without `osd`, which is not a language). */
  tesseractLanguages: string[];
}

export interface DetectOptions {
  /** Search this PATH instead of the service's own (tests use a fake one). */
  path?: string;
}

const PROBES: [keyof Omit<LocalTools, 'tesseractLanguages'>, string, string][] = [
  ['espeak', 'espeak-ng', '--version'],
  ['ffmpeg', 'ffmpeg', '-version'],
  ['ffprobe', 'ffprobe', '-version'],
  ['tesseract', 'tesseract', '--version'],
];

/** Whether `binary` starts and answers `versionArg` within a few seconds. */
async function answers(binary: string, versionArg: string, env: NodeJS.ProcessEnv | undefined): Promise<boolean> {
  try {
    await runTool(binary, [versionArg], { env, timeoutMs: 10_000, maxOutputBytes: 1024 * 1024 });
    return true;
  } catch (err) {
    if (err instanceof ToolError) return false;
    throw err;
  }
}

async function tesseractLanguages(binary: string, env: NodeJS.ProcessEnv | undefined): Promise<string[]> {
  try {
    const { stdout } = await runTool(binary, ['--list-langs'], { env, timeoutMs: 10_000, maxOutputBytes: 1024 * 1024 });
    // The first line is a heading ("List of available languages in ..."), then one code a line.
    return stdout
      .toString('utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim())
      .filter((code) => /^[A-Za-z0-9_]+$/.test(code) && code !== 'osd')
      .sort();
  } catch {
    return [];
  }
}

/** Finds which local tools are installed, by running each with its version flag. */
export async function detectTools(options: DetectOptions = {}): Promise<LocalTools> {
  const env = options.path === undefined ? undefined : { PATH: options.path };
  const found = await Promise.all(PROBES.map(async ([key, binary, arg]) => [key, (await answers(binary, arg, env)) ? binary : undefined] as const));
  const tools: LocalTools = { tesseractLanguages: [] };
  for (const [key, binary] of found) if (binary) tools[key] = binary;
  if (tools.tesseract) tools.tesseractLanguages = await tesseractLanguages(tools.tesseract, env);
  return tools;
}
