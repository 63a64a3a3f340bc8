/**
 * `POST /api/outputs/zip?job=<id|name>` with `{"names": [...]}`: the chosen results as one zip (stored, not
 * recompressed: server/zip.ts), each under its download name (prompt words and seed, as a single download is
 * named; utils/outputs.ts `zipNames`). One file, as InvokeAI's gallery hands over a multi-selection, rather than a
 * burst of downloads the browser stops to ask about. Read from disk, so it works with the engine stopped. A bad
 * body is a 400 `{error, field}` naming the key; a missing result a 404 naming it; over 1 GiB a 413.
 */
import { readFileSync, statSync } from 'node:fs';
import type { NextRequest } from 'next/server';
import { bulkNames, fieldErrorResponse, isFieldError, jobOutputs, readOutputs } from '@/server/outputs';
import { zipArchive } from '@/server/zip';
import { zipNames } from '@/utils/outputs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const MAX_ZIP_BYTES = 1024 ** 3;

export async function POST(req: NextRequest) {
  const found = jobOutputs(req.nextUrl.searchParams.get('job'));
  if (found instanceof Response) return found;
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    return fieldErrorResponse({ error: 'the body must be JSON: {"names": [...]}', field: 'body' });
  }
  const names = bulkNames(body, found.folder);
  if (isFieldError(names)) return fieldErrorResponse(names);
  const byName = new Map(readOutputs(found.folder).map((e) => [e.name, e]));
  const entries = names.map((n) => byName.get(n)).filter((e) => e !== undefined);
  const total = entries.reduce((sum, e) => sum + statSync(/*turbopackIgnore: true*/ e.path).size, 0);
  if (total > MAX_ZIP_BYTES) return fieldErrorResponse({ error: 'the results add up to more than 1 GiB: choose fewer', field: 'names', status: 413 });
  const archive = zipArchive(
    zipNames(entries).map((name, i) => ({ name, data: readFileSync(/*turbopackIgnore: true*/ entries[i].path), mtime: new Date(entries[i].mtime * 1000) })),
  );
  const filename = `${found.job.name.replace(/[^A-Za-z0-9_.-]+/g, '_')}-${entries.length}-results.zip`;
  return new Response(new Uint8Array(archive), {
    headers: {
      'content-type': 'application/zip',
      'content-disposition': `attachment; filename="${filename}"`,
      'content-length': String(archive.length),
      'cache-control': 'no-store',
    },
  });
}
