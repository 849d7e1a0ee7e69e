/**
 * Most steps one job runs as a group, its own included: a batch commits at most 128 followers
 * with its head (`StepBatch`), and a group is one batch. Fewer, larger groups than the worker's
 * slots: every group's reservation and commit take the run's row lock in turn, so on a busy run
 * more groups in parallel mostly wait (B3: 64 a group took about 10% longer than 128; 256 no
 * shorter than 128).
 */
export const GROUP_SIZE = 128;

/** How a set of ready steps is shared out between this job and new jobs. */
export interface JobPlan {
  /** The step this job runs next (to be reserved), with its group; none when it runs none of them. */
  here?: { nodeId: string; group: string[] };
  /** Steps to enqueue, each in a job of its own or heading a group (`groups`). */
  enqueue: string[];
  /** By a job's step, the siblings that job runs after it. */
  groups: Map<string, string[]>;
}

/**
 * Shares out ready steps (README.md, "Groups"): local ones (`isLocal`: bounded work in the
 * process) go in groups of up to GROUP_SIZE, one job each, the first group this job's own when
 * `runHere`; every other step gets a job of its own. A fan-out of a thousand local branches is
 * eight jobs, each one reservation and one commit (more when a group outlasts a batch's 10 ms), not
 * a thousand of each.
 */
export function planJobs(ready: Iterable<string>, isLocal: (nodeId: string) => boolean, runHere: boolean): JobPlan {
  const local: string[] = [];
  const enqueue: string[] = [];
  for (const id of new Set(ready)) (isLocal(id) ? local : enqueue).push(id);
  const groups = new Map<string, string[]>();
  let here: JobPlan['here'];
  for (let i = 0; i < local.length; i += GROUP_SIZE) {
    const [head, ...group] = local.slice(i, i + GROUP_SIZE) as [string, ...string[]];
    if (runHere && !here) {
      here = { nodeId: head, group };
      continue;
    }
    enqueue.push(head);
    if (group.length > 0) groups.set(head, group);
  }
  return { here, enqueue, groups };
}
