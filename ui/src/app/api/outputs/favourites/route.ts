/**
 * `POST /api/outputs/favourites?job=<id|name>` with `{"names": [...], "favourite": true|false}`: marks or unmarks
 * results as favourites, kept in the outputs folder (server/favourites.ts says why there), whether the engine runs
 * or not. Answers `{"favourites": [every favourite name]}`; a bad body is a 400 `{error, field}` naming the key
 * (`names[2]`), a name that is no result there a 404 naming it.
 */
import type { NextRequest } from 'next/server';
import { setFavourites } from '@/server/favourites';
import { bulkNames, fieldErrorResponse, isFieldError, jobOutputs, resultNames } from '@/server/outputs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function POST(req: NextRequest) {
  const found = jobOutputs(req.nextUrl.searchParams.get('job'));
  if (found instanceof Response) return found;
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    return fieldErrorResponse({ error: 'the body must be JSON: {"names": [...], "favourite": true}', field: 'body' });
  }
  const favourite = (body as { favourite?: unknown } | null)?.favourite;
  if (typeof favourite !== 'boolean') return fieldErrorResponse({ error: 'favourite must be true or false', field: 'favourite' });
  const names = bulkNames(body, found.folder);
  if (isFieldError(names)) return fieldErrorResponse(names);
  const now = setFavourites(found.folder, names, favourite, resultNames(found.folder));
  return Response.json({ favourites: [...now] });
}
