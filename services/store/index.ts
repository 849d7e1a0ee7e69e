export { createDatabase, type Database, type DatabaseOptions } from './database';
export { createPrismaClient, inTransaction, pingPostgres, PrismaClient, type Db, type PrismaClientOptions } from './prisma-client';
export { queryRows, type SqlPool } from './hot-sql';
export { Prisma } from './prisma-generated';
export { applyMigrations, MigrationError, type ApplyMigrationsOptions, type ApplyMigrationsResult, type MigrationErrorCode } from './migration-runner';
export { DEFAULT_MIGRATIONS_DIR, migrationChecksum, readMigrationFiles, type MigrationFile } from './migration-files';
export { microsFromDb, microsToDb } from './micros';
export { OrganizationRepository, type Organization } from './organization-repository';
export { UserRepository, type User, type UserCredentials } from './user-repository';
export { MembershipRepository, type MemberOrganization, type Membership, type Role } from './membership-repository';
export { TOKEN_CHANGES_CHANNEL, TokenChangeListener, tokensRevokedHere, type TokenChangeHandlers, type TokenChangeListenerOptions } from './token-changes';
export { findTokenByHash, TokenRepository, type NewToken, type TokenRecord, type TokenSummary } from './token-repository';
export { OAuthRepository, type ExchangeOutcome, type GrantClient, type IssuedGrantTokens, type NewGrant, type OAuthAccessTokenToIssue, type OAuthClientRecord, type OAuthCodeRecord, type OAuthGrantRecord, type RefreshOutcome } from './oauth-repository';
export { WorkflowRepository } from './workflow-repository';
export { type LatestPointer, type SlugStanding, type WorkflowRecord, type WorkflowVersionDetailRecord, type WorkflowVersionRecord } from './workflow-records';
export {
  DeviceAuthorizationRepository,
  type DecisionRefusal,
  type DecisionResult,
  type DeviceAuthorization,
  type DeviceAuthorizationStatus,
  type DeviceLoginToIssue,
  type NewDeviceAuthorization,
  type PollResult,
  type SessionTokenToIssue,
} from './device-authorization-repository';
export { LedgerRepository, type LedgerEntry, type LedgerKind, type LedgerPosting, type NewLedgerEntry } from './ledger-repository';
export { type NewRun, type RunContextRecord, type RunRecord, type RunStepRecord, type RunWebhookRecord, type WebhookDeliveryRecord } from './run-records';
export { insufficientCredit, RunRepository, type FailRunResult } from './run-repository';
export { RunCosts } from './run-costs';
export { OutputCacheRepository, type NewOutputCacheEntry } from './output-cache-repository';
export { WebhookRepository, type ClaimedWebhook } from './webhook-repository';
export { type RunListKey, type RunListOptions, type RunListPage, type RunSummaryRecord } from './run-history';
export { StepRepository } from './step-repository';
export {
  type AttemptRefusal,
  type CompleteStepInput,
  type CompleteStepResult,
  type FailStepInput,
  type FailStepResult,
  type FollowerStep,
  type ReserveInput,
  type ReserveRefusal,
  type ReserveResult,
  type RetryAttemptInput,
  type RetryAttemptResult,
  type StepAttempt,
} from './step-transitions';
export { RunRecoveryRepository, type OpenStepsOfStoppedRun, type RunnableStep, type StuckStep } from './run-recovery-repository';
export {
  ArtifactRepository,
  type ExpiredArtifact,
  type NewArtifact,
  type RunArtifactRecorder,
  type SweepBatchOptions,
  type SweepBatchResult,
} from './artifact-repository';
export { type FeedBatchOut } from './hot-sql';
export { BatchRepository, type BatchRecord, type BatchRowRecord, type CreateBatchResult, type NewBatch } from './batch-repository';
export { ScheduleRepository, type CreateScheduleResult, type NewSchedule, type PauseReason, type ScheduleRecord, type ScheduleState, type ScheduleTickRecord, type ScheduleTickState } from './schedule-repository';
