import fs from 'node:fs';

/**
 * CPU time of the processes of a bench stack, read from /proc (Linux): where a run's CPU goes
 * besides this process. Postgres is its postmaster (found by its data directory in the stack's
 * temporary directory) and every child of it (backends, WAL writer, checkpointer); Redis is the
 * server listening on the stack's port.
 */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** user + system, in clock ticks. */
  ticks: number;
  cmdline: string;
}

function readAll(): ProcStat[] {
  const stats: ProcStat[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name (field 2) is in parentheses and may hold spaces: fields are counted after it.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      stats.push({ pid: Number(entry), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), cmdline });
    } catch {
      // The process ended while it was read.
    }
  }
  return stats;
}

/** CPU seconds of each process of the stack's Postgres (all its processes) and Redis, by pid, and of this process. */
export interface StackCpu {
  postgres: Map<number, number>;
  redis: Map<number, number>;
  self: number;
}

/** The stack's Postgres processes among `all`: its postmaster (found by its data directory) and every child of it. */
function postgresOf(all: ProcStat[], tmpDir: string): ProcStat[] {
  const postmaster = all.find((p) => p.cmdline.includes(tmpDir) && /postgres/.test(p.cmdline) && /-D/.test(p.cmdline));
  return postmaster ? all.filter((p) => p.pid === postmaster.pid || p.ppid === postmaster.pid) : [];
}

export function stackCpu(stack: { tmpDir: string; redisUrl: string }): StackCpu {
  const all = readAll();
  const port = new URL(stack.redisUrl).port;
  const seconds = (list: ProcStat[]) => new Map(list.map((p) => [p.pid, p.ticks / TICKS_PER_SECOND]));
  const usage = process.cpuUsage();
  return {
    postgres: seconds(postgresOf(all, stack.tmpDir)),
    redis: seconds(all.filter((p) => p.cmdline.startsWith('redis-server') && p.cmdline.includes(`:${port}`))),
    self: (usage.user + usage.system) / 1e6,
  };
}

/**
 * CPU seconds used between two readings: per process alive at the second (one that started in
 * between counts whole; one that ended in between is not counted, which undercounts it slightly).
 */
export function cpuBetween(before: StackCpu, after: StackCpu): { postgres: number; redis: number; self: number } {
  const used = (a: Map<number, number>, b: Map<number, number>) => [...b].reduce((total, [pid, s]) => total + s - (a.get(pid) ?? 0), 0);
  return { postgres: used(before.postgres, after.postgres), redis: used(before.redis, after.redis), self: after.self - before.self };
}

/**
 * CPU milliseconds of each process of the stack's Postgres, by pid, with its kind: `backends` for
 * a client connection's process ("postgres: user db 127.0.0.1(5555) idle"), `postmaster`, or the
 * helper's own name (`walwriter`, `checkpointer` …).
 */
export function postgresCpuByKind(tmpDir: string): Map<number, { kind: string; ms: number }> {
  const processes = postgresOf(readAll(), tmpDir);
  const postmaster = processes.find((p) => !processes.some((q) => q.pid === p.ppid));
  return new Map(
    processes.map((p) => {
      const kind = p === postmaster ? 'postmaster' : /\d+\.\d+\.\d+\.\d+\(\d+\)/.test(p.cmdline) ? 'backends' : p.cmdline.replace(/^postgres: /, '').trim();
      return [p.pid, { kind, ms: (p.ticks * 1000) / TICKS_PER_SECOND }];
    }),
  );
}

/** CPU seconds (user + system) one process has used so far; NaN once it is gone (or off Linux). */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** A process' resident set (VmRSS of /proc/<pid>/status), bytes; NaN once it is gone. */
export function processRssBytes(pid: number | undefined): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}
