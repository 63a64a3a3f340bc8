'use client';
/**
 * One file at a time uploaded to the engine's POST /assets (a start image, a start video): whether one is on its
 * way (the form waits for it before Generate, through `onUploading`), and the engine's reason when it refused it.
 */
import { useEffect, useState } from 'react';
import { type Asset, uploadAsset } from '@/utils/assets';

export function useAssetUpload(jobId: string | null, disabled: boolean, onUploading: (uploading: boolean) => void) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState('');
  useEffect(() => onUploading(pending), [pending, onUploading]);

  /** `file` uploaded, then `done` with its asset; nothing while disabled or without an engine. */
  async function upload(file: File, done: (asset: Asset) => void) {
    if (disabled || !jobId) return;
    setError('');
    setPending(true);
    try {
      done(await uploadAsset(jobId, file, file.name));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setPending(false);
    }
  }

  return { pending, error, setError, upload };
}
