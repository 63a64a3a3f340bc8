'use client';
/**
 * Download one result under a readable name. Online, the engine names it (`?download=1`: prompt words and
 * seed); that route needs the bearer token, which a plain link cannot send, so the file is fetched and saved
 * from a blob. Offline, the public /api/files URL with the same name worked out here (utils/outputs.ts).
 */
import { useState } from 'react';
import { apiFetch } from '@/utils/api';
import { downloadName, filenameFromDisposition } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

function save(href: string, name: string) {
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

export default function DownloadButton({ entry, jobId, online, className = '' }: { entry: OutputEntry; jobId: string | null; online: boolean; className?: string }) {
  const [error, setError] = useState('');
  const fallback = downloadName(entry);

  async function download() {
    setError('');
    if (!online) return save(entry.url, fallback);
    try {
      const res = await apiFetch(`/api/inference/outputs/${encodeURIComponent(entry.name)}?job=${encodeURIComponent(jobId ?? '')}&download=1`);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const blobUrl = URL.createObjectURL(await res.blob());
      save(blobUrl, filenameFromDisposition(res.headers.get('content-disposition')) ?? fallback);
      setTimeout(() => URL.revokeObjectURL(blobUrl), 10_000);
    } catch (e) {
      // the engine went away between polls: the file is still on disk
      setError((e as Error).message);
      save(entry.url, fallback);
    }
  }

  return (
    <button className={className} onClick={download} aria-label={`Download ${fallback}`} title={error || fallback} data-testid="download">
      Download
    </button>
  );
}
