#!/bin/sh
# Stand-in for Prisma's native schema engine, which cannot be downloaded on this
# offline machine. Failing loudly keeps `prisma migrate` from "succeeding" while
# doing nothing. Migrations are applied by `npm run db:migrate` (lib/db/migrate.ts).
echo "prisma: the native schema engine is not installed here; use 'npm run db:migrate' (see README)" >&2
exit 1
