export {
  DEFAULT_CAP_MICROS,
  MAX_CAP_MICROS,
  MICROS_PER_USD,
  ceilMicros,
  effectiveCapMicros,
  microsToUsd,
  parseUsdText,
  sumMicros,
  usdToMicrosFloor,
  type Micros,
} from './money';
export { bumpSemver, compareSemver, formatSelector, formatSemver, parseSelector, parseSemver, type Parsed, type Selector, type Semver } from './semver';
export {
  MAX_SLUG_LENGTH,
  RESERVED_NAMESPACES,
  checkOrgSlug,
  checkSlug,
  formatWorkflowId,
  parseWorkflowId,
  parseWorkflowRef,
  type WorkflowId,
  type WorkflowRef,
} from './workflow-ref';
export { artifactKindOf, checkLiteral, coerceToConnector, connectorsCompatible, isDataConnector } from './connector-values';
export { planWorkflow, readySteps, type Plan, type PlannedStep } from './plan';
export { formatReference, looksLikeBrokenReference, NODE_ID_PATTERN, parseReference, type Reference } from './references';
export { checkRunInputs, type RunInputsCheck } from './run-inputs';
export {
  referenceOf,
  summarizeProblems,
  unavailableNodeMessage,
  validateWorkflow,
  VALUE_PORT,
  type CheckedNode,
  type CheckedWorkflow,
  type InputReference,
  type NodeRole,
  type SpecLookup,
  type ValidateOptions,
  type WorkflowCheck,
} from './validate-workflow';
export { deriveInterface, type InterfaceInput, type InterfaceOutput, type WorkflowInterface } from './workflow-interface';
export type { WorkflowProblem } from './workflow-problems';
export { collectRunOutputs, outputSources, resolveStepInputs, type RunValues } from './step-values';
export { prepareGraph, prepareWorkflow, type PreparedWorkflow, type PrepareResult } from './prepare-workflow';
export { expandMounts, mountedAddresses, mountOf, type ExpandResult, type MountedDefinitions, type MountProblemCode } from './expand-mounts';
export { MOUNT_SEPARATOR } from './mount-separator';
export type { PublishedVersion, PublishRequest } from './published-version';
export { checkBatchRows, parseRowsFile, ROWS_FILE_FORMATS, type CheckedRows, type ParsedRows, type RowProblem, type RowsFileFormat } from './batch-rows';
export { checkCron, isTimeZone, monthStart, tickAfter, tickBefore, ticksAfter, ticksBetween, type CronCheck } from './schedule-cron';
