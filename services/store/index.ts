export { createPrismaClient, inTransaction, PrismaClient, type Db, type PrismaClientOptions } from './prisma-client';
export { applyMigrations, MigrationError, type ApplyMigrationsOptions, type ApplyMigrationsResult, type MigrationErrorCode } from './migration-runner';
export { DEFAULT_MIGRATIONS_DIR, migrationChecksum, readMigrationFiles, type MigrationFile } from './migration-files';
export { microsFromDb, microsToDb } from './micros';
export { OrganizationRepository, type Organization } from './organization-repository';
export { UserRepository, type User, type UserCredentials } from './user-repository';
export { MembershipRepository, type Membership, type Role } from './membership-repository';
export { TokenRepository, type NewToken, type TokenRecord, type TokenSummary } from './token-repository';
export { LedgerRepository, type LedgerEntry, type LedgerKind, type LedgerPosting, type NewLedgerEntry } from './ledger-repository';
export { type NewRun, type RunRecord, type RunStepRecord } from './run-records';
export { RunRepository, type FailRunResult } from './run-repository';
export { StepRepository } from './step-repository';
export {
  type CompleteStepInput,
  type CompleteStepResult,
  type FailStepInput,
  type FailStepResult,
  type ReserveInput,
  type ReserveRefusal,
  type ReserveResult,
} from './step-transitions';
export { RunRecoveryRepository, type RunnableStep, type StuckStep } from './run-recovery-repository';
