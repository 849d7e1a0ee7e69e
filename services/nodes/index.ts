export { createCatalog, searchNodes, type NodeCatalog, type NodeQuery } from './catalog';
export { raceAbort } from './abortable';
export { dataKindOfMimeType, type ArtifactBytes, type ArtifactStore, type PutArtifactOptions } from './artifact-store';
export { defineNode, type NodeContext, type NodeDefinition } from './node-definition';
export { applyDefaults, checkNodeInputs, checkNodeOutputs, invalidInput, type NodeInputs, type NodeOutputs, type PortIssue } from './node-inputs';
export { MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE, MAX_SPLIT_PARTS, MAX_TEXT_LENGTH } from './limits';
export { IMAGE_BASE_MICROS, IMAGE_MAX_MICROS, IMAGE_MICROS_PER_MEGAPIXEL, imagePriceMicros } from './pricing';
export { createNodeCatalog, findNode, PLATFORM_NODES } from './registry';
export { BlobArtifactStore, type BlobArtifactStoreOptions } from './blob-artifact-store';
