/**
 * Checksums of migration files that were edited after they had been applied somewhere, before
 * migrations were pinned by `prisma/migrations/lock.json`. A database that recorded one of these
 * is not refused (`checksum_mismatch`): the runner records the current checksum instead, because
 * what the edits changed is replaced anyway. Never add to this list to get around an edited
 * migration: put the change in a new migration.
 *
 * `20261123161500_step_transition_functions` created the step transition functions and was
 * rewritten three times (`git log --follow` on it: d17d840, 118dc01, 438b572, then d64c0b3, the
 * file as it is). Its only contents are functions, and `prisma/functions/*.sql` drop every
 * signature it ever created and define their successors, so each earlier version ends up with
 * the same functions as the current one. test/integration/migrations.test.ts migrates a database
 * from each earlier version (vendored in test/fixtures/migrations) and compares.
 */
export const SUPERSEDED_MIGRATION_CHECKSUMS: Readonly<Record<string, readonly string[]>> = {
  '20261123161500_step_transition_functions': [
    '8a1caedede2d0c102ce2a49b50061c4731b6d5d858884e672c6811107d2e1921', // d17d840
    'a2182ef6238a303737e1d516003c3a6336db42e4e55739f24834a8baba2f6226', // 118dc01
    '9e55180f937760a00c3612a60cbb67ff8e9422f979a37f82671e43dced529bdf', // 438b572
  ],
};

/** Whether `recorded` is an earlier, superseded version of migration `name`. */
export function isSupersededChecksum(name: string, recorded: string): boolean {
  return SUPERSEDED_MIGRATION_CHECKSUMS[name]?.includes(recorded) ?? false;
}
