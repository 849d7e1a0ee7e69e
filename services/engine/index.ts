export {
  DEFAULT_CAP_MICROS,
  MAX_CAP_MICROS,
  MICROS_PER_USD,
  ceilMicros,
  effectiveCapMicros,
  microsToUsd,
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
