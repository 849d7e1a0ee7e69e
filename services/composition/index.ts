export { buildService, type ServiceRuntime } from './build-service';
export { buildApi, type BuiltApi } from './build-api';
export { buildResources, type ResourceOptions, type ServiceResources } from './service-resources';
export { buildWorker, type BuiltWorker } from './build-worker';
