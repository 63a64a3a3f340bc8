/** AI Toolkit's settings: GET the key/value map with defaults filled in; POST upserts the known keys. */
import type { NextRequest } from 'next/server';
import { defaultTrainingFolder, toolkitRoot, trainingFolder } from '@/server/paths';
import { getSettings, setSetting } from '@/server/settings';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const KEYS = ['HF_TOKEN', 'TRAINING_FOLDER', 'DATASETS_FOLDER', 'MODELS_PATH'];

export async function GET() {
  const stored = getSettings();
  return Response.json({
    HF_TOKEN: stored.HF_TOKEN ?? '',
    TRAINING_FOLDER: stored.TRAINING_FOLDER || defaultTrainingFolder(),
    DATASETS_FOLDER: stored.DATASETS_FOLDER || `${toolkitRoot()}/datasets`,
    MODELS_PATH: process.env.MODELS_PATH || stored.MODELS_PATH || '',
    effective_training_folder: trainingFolder(),
  });
}

export async function POST(req: NextRequest) {
  const body = (await req.json()) as Record<string, unknown>;
  for (const key of KEYS) if (typeof body[key] === 'string') setSetting(key, body[key] as string);
  return Response.json({ ok: true });
}
