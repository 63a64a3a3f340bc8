/**
 * `GET /api/outputs?job=<id|name>&offset=&limit=&arch=&model=&q=&favourites=&sort=`: an engine job's results read
 * from its outputs folder on disk, whether the engine runs or not (the engine's own GET /outputs needs it
 * running). `q`: words that must all be in the prompt; `favourites=1`: only favourites; `sort`: newest (default),
 * oldest, seed, seed_desc. A bad parameter is a 400 `{error, field}`. Items have the engine's shape plus
 * `favourite`; files are served by /api/files. Auth and the request guard: src/proxy.ts.
 */
import type { NextRequest } from 'next/server';
import { fieldErrorResponse, isFieldError, jobOutputs, outputQuery, pageOutputs, pageParams, readOutputs } from '@/server/outputs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(req: NextRequest) {
  const q = req.nextUrl.searchParams;
  const found = jobOutputs(q.get('job'));
  if (found instanceof Response) return found;
  const query = outputQuery(q);
  if (isFieldError(query)) return fieldErrorResponse(query);
  const { offset, limit } = pageParams(q.get('offset'), q.get('limit'));
  const page = pageOutputs(readOutputs(found.folder), query.filter, offset, limit, query.sort);
  return Response.json(page, { headers: { 'cache-control': 'no-store' } });
}
