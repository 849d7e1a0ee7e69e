// Prisma CLI configuration (used by `prisma generate`; migrations run through our own offline
// tools, see prisma/tools/ and services/store/migration-runner.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
