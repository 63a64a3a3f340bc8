'use client';
/** An upload to the engine's POST /assets through the proxy: the id a request names the file by, and its size. */
import { apiFetch, errorMessage } from './api';

export interface Asset {
  id: string;
  width: number;
  height: number;
}

export async function uploadAsset(jobId: string, file: Blob, name: string): Promise<Asset> {
  const form = new FormData();
  form.append('file', file, name);
  const res = await apiFetch(`/api/inference/assets?job=${encodeURIComponent(jobId)}`, { method: 'POST', body: form });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(errorMessage(body) || `upload failed (HTTP ${res.status})`);
  return { id: body.id, width: body.width, height: body.height };
}
