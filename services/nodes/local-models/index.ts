export {
  availableLocalModels,
  cpuPriceMicros,
  LOCAL_MODEL_NODE_IDS,
  LOCAL_MODEL_NODES,
  localModelNodes,
  MAX_OCR_PIXELS,
  MAX_SPEECH_DETECT_SECONDS,
  MAX_UPSCALE_PIXELS,
  MODEL_TIME_BOUNDS_MS,
  NSFW_CLASSES,
  type LocalModelNodeId,
  type LocalModelSettings,
} from './local-model-nodes';
export { ModelJobError, ModelPool, type ModelJobResult, type ModelTask, type ModelTasks } from './model-pool';
