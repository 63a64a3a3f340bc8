/**
 * `DELETE /api/outputs/<name>?job=<id|name>`: removes a result, its thumbnail and its sidecar while the engine
 * is stopped. A running engine owns its folder (a queued request may use the file as its control image, which
 * its own DELETE /outputs/{name} checks), so then this answers 409 and the page deletes through the engine.
 */
import type { NextRequest } from 'next/server';
import { OutputError, deleteOutput, findEngineJob, safeOutputsFolder } from '@/server/outputs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const ENGINE_ALIVE = new Set(['running', 'stopping']);

export async function DELETE(req: NextRequest, ctx: { params: Promise<{ name: string }> }) {
  const { name } = await ctx.params;
  const selector = req.nextUrl.searchParams.get('job');
  if (!selector) return Response.json({ error: 'say which engine job: ?job=<id or name>' }, { status: 400 });
  const job = findEngineJob(selector);
  if (!job) return Response.json({ error: `no inference engine job ${JSON.stringify(selector)}` }, { status: 404 });
  if (ENGINE_ALIVE.has(job.status)) {
    return Response.json({ error: `engine ${job.name} is ${job.status}: delete through it (/api/inference/outputs/<name>)` }, { status: 409 });
  }
  const folder = safeOutputsFolder(job);
  if (!folder) return Response.json({ error: `the outputs of ${job.name} are outside the training folder` }, { status: 403 });
  try {
    deleteOutput(folder, name);
  } catch (e) {
    if (e instanceof OutputError) return Response.json({ error: e.message }, { status: e.status });
    throw e;
  }
  return new Response(null, { status: 204 });
}
