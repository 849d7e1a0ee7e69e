/**
 * The Prisma client generated from prisma/schema.prisma by `make install` (`prisma generate`). It
 * is generated into node_modules, with the rest of the installed code, and reaches the store only
 * through this module.
 */
export * from '../../node_modules/.svc-prisma/client/client';
