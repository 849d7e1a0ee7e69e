export type { CatalogEntry, ChatCatalogEntry, InputPortEntry, MediaCatalogEntry, OutputPortEntry } from './catalog-entry';
export { CatalogFileError, readCatalogDocument, readCatalogFile, readCatalogFiles, type CatalogDocument } from './read-catalog-file';
export { catalogNode, entryRevision, type ProviderConnections } from './catalog-node';
export { parsePriceFormula, FormulaError, type PriceFormula } from './price-formula';
