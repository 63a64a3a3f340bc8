/**
 * Files of the training folder (job outputs, logs), AI Toolkit's `/api/files/<url-encoded absolute path>`.
 * Public like AI Toolkit's (media elements cannot send a bearer header); confined to the training folder after
 * links are followed, and never a job's private files (server/files.ts isPrivate). Refusals are 404, as for a
 * file that does not exist: they say nothing about what is there.
 */
import type { NextRequest } from 'next/server';
import { resolveServable, serveFile } from '@/server/files';
import { trainingFolder } from '@/server/paths';
import { isSystemFolder } from '@/server/settingsPolicy';
import { realpathSync } from 'node:fs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(req: NextRequest, ctx: { params: Promise<{ filePath: string[] }> }) {
  const { filePath } = await ctx.params;
  // Next has already url-decoded each segment (an encoded absolute path arrives as one segment with '/')
  const root = trainingFolder();
  let realRoot = root;
  try {
    realRoot = realpathSync(/*turbopackIgnore: true*/ root);
  } catch {
    /* not made yet: nothing to serve, resolveServable finds nothing */
  }
  // A training folder set before settings were checked (or by AITK_TRAINING_FOLDER) may be a system folder
  if (isSystemFolder(realRoot)) return Response.json({ error: 'the training folder is a system folder' }, { status: 403 });
  const file = resolveServable(filePath, [root]);
  if (!file) return Response.json({ error: 'Not found' }, { status: 404 });
  return serveFile(file, req, { download: req.nextUrl.searchParams.get('download') === '1' });
}

export { handle as GET, handle as HEAD };
