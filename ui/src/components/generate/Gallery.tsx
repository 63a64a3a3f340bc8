'use client';
/** Finished outputs of the engine (GET /outputs, newest first), each in its player, with its settings. */
import Media, { mediaKind } from './Media';
import type { OutputEntry } from '@/utils/types';

interface Props {
  outputs: OutputEntry[];
  onReuse: (entry: OutputEntry) => void;
}

export default function Gallery({ outputs, onReuse }: Props) {
  return (
    <section className="card" data-testid="gallery">
      <h2 className="mb-3 text-sm font-semibold">Results ({outputs.length})</h2>
      {!outputs.length && <div className="text-sm text-gray-500">Nothing generated yet.</div>}
      <div className="grid grid-cols-[repeat(auto-fill,minmax(11rem,1fr))] gap-3">
        {outputs.map((o) => {
          const model = o.meta?.config?.model;
          const sample = o.meta?.config?.sample as { prompt?: string; width?: number; height?: number; duration_s?: number } | undefined;
          const size =
            mediaKind(o.name) === 'audio'
              ? sample?.duration_s ? `${sample.duration_s} s · ` : ''
              : sample?.width && sample?.height ? `${sample.width}×${sample.height} · ` : '';
          return (
            <figure key={o.name} className="rounded border border-gray-800 bg-gray-950 p-2" data-testid="gallery-item" data-name={o.name}>
              <div className="flex aspect-square items-center justify-center overflow-hidden rounded bg-black">
                <Media url={o.url} name={o.name} className="max-h-full max-w-full w-full object-contain" />
              </div>
              <figcaption className="mt-1 space-y-0.5 text-xs text-gray-400">
                <div className="truncate text-gray-300" title={sample?.prompt}>
                  {sample?.prompt ?? o.name}
                </div>
                <div className="truncate">
                  {model?.arch ?? '?'} · {size}seed {o.meta?.seed ?? '?'}
                </div>
                <div className="flex gap-2">
                  <a className="text-sky-400 hover:underline" href={`${o.url}?download=1`} download={o.name}>
                    download
                  </a>
                  {o.meta?.config && (
                    <button className="text-sky-400 hover:underline" onClick={() => onReuse(o)}>
                      reuse settings
                    </button>
                  )}
                </div>
              </figcaption>
            </figure>
          );
        })}
      </div>
    </section>
  );
}
