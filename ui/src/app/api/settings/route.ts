/**
 * AI Toolkit's settings: GET the key/value map with defaults filled in (secrets only as "set or not"); POST
 * stores the known keys after server/settingsPolicy.ts has checked them (422 naming each refused key).
 */
import type { NextRequest } from 'next/server';
import { defaultTrainingFolder, toolkitRoot, trainingFolder } from '@/server/paths';
import { deleteSetting, getSettings, setSetting } from '@/server/settings';
import { settingsUpdate } from '@/server/settingsPolicy';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET() {
  const stored = getSettings();
  return Response.json({
    HF_TOKEN: '',
    HF_TOKEN_SET: Boolean(stored.HF_TOKEN),
    TRAINING_FOLDER: stored.TRAINING_FOLDER || defaultTrainingFolder(),
    DATASETS_FOLDER: stored.DATASETS_FOLDER || `${toolkitRoot()}/datasets`,
    MODELS_PATH: process.env.MODELS_PATH || stored.MODELS_PATH || '',
    effective_training_folder: trainingFolder(),
  });
}

export async function POST(req: NextRequest) {
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    return Response.json({ error: 'expected a JSON object' }, { status: 422 });
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return Response.json({ error: 'expected a JSON object' }, { status: 422 });
  }
  const update = settingsUpdate(body as Record<string, unknown>);
  if (Object.keys(update.errors).length) {
    return Response.json({ error: Object.values(update.errors).join('; '), fields: update.errors }, { status: 422 });
  }
  for (const [key, value] of Object.entries(update.set)) setSetting(key, value);
  for (const key of update.clear) deleteSetting(key);
  return Response.json({ ok: true });
}
