import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { stack, uniqueName } from '../support/stack';

/**
 * deploy/local/lib.sh's apt-get calls, against a fake `apt-get` (and `id`, so the scripts act as
 * root) on a PATH that holds nothing else but the few utilities the scripts use: no espeak-ng,
 * ffmpeg or tesseract, whatever this machine has installed.
 */
const ROOT = path.resolve(__dirname, '../..');
const UTILITIES = ['mktemp', 'cat', 'rm', 'tail', 'sed', 'grep', 'dirname'];
const LOCK_LINE = 'Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)...';

interface Fake {
  dir: string;
  /** One line per apt-get call: its arguments. */
  calls(): string[];
}

/** A PATH directory whose apt-get runs `body` (bash; "$@" are its arguments). */
function fakeApt(body: string): Fake {
  const dir = path.join(stack().tmpDir, uniqueName('fake-apt'));
  fs.mkdirSync(dir, { recursive: true });
  for (const name of UTILITIES) {
    const real = spawnSync('bash', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
    fs.symlinkSync(real, path.join(dir, name));
  }
  fs.writeFileSync(path.join(dir, 'id'), '#!/bin/bash\necho 0\n', { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'apt-get'), `#!/bin/bash\necho "$*" >> "${dir}/calls"\n${body}\n`, { mode: 0o755 });
  return {
    dir,
    calls: () => (fs.existsSync(path.join(dir, 'calls')) ? fs.readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n') : []),
  };
}

function bash(fake: Fake, script: string, env: Record<string, string> = {}) {
  const result = spawnSync('/bin/bash', ['-c', script], {
    cwd: ROOT,
    env: { PATH: fake.dir, TMPDIR: fake.dir, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stderr: result.stderr };
}

const INSTALL = '. deploy/local/lib.sh; install_packages "espeak-ng" espeak-ng';

describe('apt-get in the deploy scripts', () => {
  it("waits for apt's lock with apt's own timeout (APT_LOCK_TIMEOUT) and says once who holds it", () => {
    const fake = fakeApt(`echo "${LOCK_LINE}"; echo "${LOCK_LINE}"; echo "Setting up espeak-ng ..."; exit 0`);
    const { status, stderr } = bash(fake, INSTALL, { APT_LOCK_TIMEOUT: '7' });
    expect(status).toBe(0);
    expect(fake.calls()).toEqual(['-q -o DPkg::Lock::Timeout=7 install -y --no-install-recommends espeak-ng']);
    const waits = stderr.split('\n').filter((line) => line.startsWith('waiting'));
    expect(waits).toEqual(["waiting for apt's lock held by unattended-upgr (pid 4242) (unattended-upgrades?) up to 7 s (APT_LOCK_TIMEOUT)"]);
  });

  it('waits 600 s by default', () => {
    const fake = fakeApt('exit 0');
    expect(bash(fake, INSTALL).status).toBe(0);
    expect(fake.calls()[0]).toContain('-o DPkg::Lock::Timeout=600 ');
  });

  it('shows apt\'s error when the lock is still held at the timeout, without retrying', () => {
    // What apt 2.6 prints when DPkg::Lock::Timeout runs out.
    const fake = fakeApt(`echo "${LOCK_LINE}"; echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?"; exit 100`);
    const { status, stderr } = bash(fake, INSTALL, { APT_LOCK_TIMEOUT: '3' });
    expect(status).toBe(1);
    expect(fake.calls()).toHaveLength(1);
    expect(stderr).toContain('  | E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?');
    expect(stderr).toContain('error: could not install espeak-ng; install them with: sudo apt-get install -y --no-install-recommends espeak-ng');
  });

  it("refreshes the package lists after a failed install, and shows apt's own error when it fails again", () => {
    // It waited for the lock first: a wait is no reason to skip the refresh.
    const fake = fakeApt(`[[ " $* " == *" update "* ]] && exit 0; echo "${LOCK_LINE}"; echo "E: Unable to locate package espeak-ng" >&2; exit 100`);
    const { status, stderr } = bash(fake, INSTALL);
    expect(status).toBe(1);
    expect(fake.calls().map((call) => call.split(' ')[3])).toEqual(['install', 'update', 'install']);
    expect(stderr).toContain('apt-get failed while installing espeak-ng; its last lines');
    expect(stderr).toContain('  | E: Unable to locate package espeak-ng');
  });

  it('leaves a failed media install non-fatal, naming the nodes left out and the command that installs them', () => {
    const fake = fakeApt('echo "E: Unable to locate package ffmpeg" >&2; exit 100');
    const { status, stderr } = bash(fake, '/bin/bash deploy/local/install-deps.sh media');
    expect(status).toBe(0);
    expect(stderr).toContain('  | E: Unable to locate package ffmpeg');
    expect(stderr).toContain(
      'warning: speech-espeak audio-convert audio-trim audio-concat audio-waveform video-thumbnail video-frames media-probe ocr-tesseract are left out of the node catalog',
    );
    expect(stderr).toContain('install them with: sudo apt-get install -y --no-install-recommends espeak-ng ffmpeg tesseract-ocr tesseract-ocr-eng');
  });
});
