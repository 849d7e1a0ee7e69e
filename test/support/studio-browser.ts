import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Screenshots the studio's tests save for a person to look at (not committed). */
export const ARTIFACTS = path.resolve(__dirname, '../e2e/artifacts');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

/**
 * Everything a page said went wrong: console errors and uncaught exceptions, with the page's
 * address. A test asserts the list is empty at its end (the studio's "no console errors" bar).
 */
export function watchProblems(page: Page, problems: string[]): void {
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`${page.url()}: console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`${page.url()}: page error: ${error.message}`));
}

/** Saves a full-window screenshot as test/e2e/artifacts/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
}

/** Where an element is once it has stopped moving (the canvas animates fit-view and layout changes). */
export async function settledBox(page: Page, testId: string): Promise<{ x: number; y: number; width: number; height: number } | null> {
  let last = JSON.stringify(await page.getByTestId(testId).boundingBox());
  for (let i = 0; i < 50; i++) {
    await page.waitForTimeout(80);
    const now = JSON.stringify(await page.getByTestId(testId).boundingBox());
    if (now === last) return JSON.parse(now) as { x: number; y: number; width: number; height: number } | null;
    last = now;
  }
  throw new Error(`${testId} kept moving for 4 s`);
}

/** Presses the mouse on one element's centre and releases it on another's, in steps (a handle-to-handle connection). */
export async function dragBetween(page: Page, fromTestId: string, toTestId: string): Promise<void> {
  const from = await settledBox(page, fromTestId);
  const to = await settledBox(page, toTestId);
  if (!from || !to) throw new Error(`cannot drag ${fromTestId} → ${toTestId}: one of them is not on screen`);
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 12 });
  await page.mouse.up();
}
