export { createCatalog, searchNodes, type NodeCatalog, type NodeQuery } from './catalog';
