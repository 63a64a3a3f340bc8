'use client';
/**
 * A compare grid as it fills in: the columns' labels (a checkpoint's step) over the cells, the rows' labels
 * beside them, a page per value of the third axis. Each cell paints its latest latent as the main preview does
 * (projected with its own start frame's factors, drawn at latent resolution and scaled by CSS), then its result
 * (a video cell plays its clip, muted, in a loop).
 * A click opens the cell in the result viewer, with ←/→ through the grid's cells; the viewer's "Reuse" sends the
 * cell's settings to the form.
 */
import { useEffect, useRef, useState } from 'react';
import { apiFetch, errorMessage } from '@/utils/api';
import { type GridCell, type GridState, pageCount, pageRows } from '@/utils/gridRun';
import type { Picture } from '@/utils/engineStream';
import type { OutputEntry } from '@/utils/types';
import { mediaKind } from './Media';
import Viewer from './Viewer';

function CellPicture({ picture }: { picture: Picture }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    el.width = picture.width;
    el.height = picture.height;
    el.getContext('2d')!.putImageData(new ImageData(picture.data, picture.width, picture.height), 0, 0);
  }, [picture]);
  return <canvas ref={canvas} className="pixelated h-full w-full object-contain" data-testid="grid-cell-latent" />;
}

/** A finished cell: its picture, its clip playing muted in a loop, or a sound's mark (the viewer plays it). */
function CellResult({ result, alt }: { result: NonNullable<GridCell['result']>; alt: string }) {
  const kind = mediaKind(result.path);
  if (kind === 'video') return <video src={result.url} className="h-full w-full object-contain" muted loop autoPlay playsInline aria-label={alt} data-testid="grid-cell-result" />;
  if (kind === 'audio')
    return (
      <span className="absolute inset-0 flex items-center justify-center text-3xl text-gray-500" aria-label={alt} data-testid="grid-cell-result">
        ♪
      </span>
    );
  // eslint-disable-next-line @next/next/no-img-element
  return <img src={result.url} alt={alt} className="h-full w-full object-contain" data-testid="grid-cell-result" />;
}

function Cell({ cell, onOpen }: { cell: GridCell; onOpen: () => void }) {
  const pct = cell.total ? Math.round((100 * cell.step) / cell.total) : 0;
  return (
    <button
      type="button"
      className="relative block aspect-square w-full overflow-hidden rounded border border-gray-800 bg-black disabled:cursor-default"
      onClick={onOpen}
      disabled={!cell.result}
      title={Object.entries(cell.labels).map(([k, v]) => `${k}: ${v}`).join('\n')}
      data-testid="grid-cell"
      data-cell={cell.index}
      data-status={cell.status}
      data-latents={cell.latents}
      data-request-id={cell.requestId ?? ''}
    >
      {cell.result ? (
        <CellResult result={cell.result} alt={Object.values(cell.labels).join(', ')} />
      ) : cell.picture ? (
        <CellPicture picture={cell.picture} />
      ) : (
        <span className="absolute inset-0 flex items-center justify-center p-1 text-center text-xs text-gray-500">
          {cell.error ? cell.error.code : cell.stage}
        </span>
      )}
      {cell.status === 'running' && (
        <span className="absolute inset-x-0 bottom-0 h-1 bg-gray-800">
          <span className="block h-full bg-sky-500" style={{ width: `${pct}%` }} />
        </span>
      )}
    </button>
  );
}

/** A cell's result as the viewer shows a gallery item (its resolved request as the sidecar's `config`). */
export function cellEntry(cell: GridCell): OutputEntry | null {
  if (!cell.result) return null;
  const name = cell.result.path.split('/').pop() ?? cell.result.path;
  return {
    name,
    path: cell.result.path,
    url: cell.result.url,
    bytes: 0,
    mtime: 0,
    meta: { request_id: cell.requestId ?? undefined, seed: cell.result.seed, config: (cell.config ?? undefined) as NonNullable<OutputEntry['meta']>['config'] },
  };
}

interface Props {
  grid: GridState;
  jobId: string | null;
  online: boolean;
  onReuse: (entry: OutputEntry) => void;
}

export default function GridView({ grid, jobId, online, onReuse }: Props) {
  const [open, setOpen] = useState<number | null>(null);
  const [x, y, z] = grid.axes;
  const entries = grid.cells.map(cellEntry).filter((e): e is OutputEntry => e !== null);
  const openIndex = (cell: GridCell) => entries.findIndex((e) => e.path === cell.result?.path);
  return (
    <div className="flex flex-col gap-4" data-testid="grid-view" data-grid-id={grid.gridId ?? ''}>
      {Array.from({ length: pageCount(grid) }, (_, page) => (
        <div key={page} data-testid="grid-page">
          {z && <div className="mb-1 text-sm text-gray-300">{z.name}: {z.labels[page]}</div>}
          <table className="w-full table-fixed border-separate border-spacing-1 text-xs text-gray-300">
            <thead>
              <tr>
                {y && <th className="w-28 text-left font-normal text-gray-500">{y.name} \ {x?.name}</th>}
                {x?.labels.map((label, i) => (
                  <th key={i} className="truncate text-left font-medium" title={label} data-testid="grid-column">
                    {x.steps[i] !== null && x.steps[i] !== undefined ? `step ${x.steps[i]}` : label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {pageRows(grid, page).map((row, r) => (
                <tr key={r}>
                  {y && <th className="break-words text-left align-middle font-normal" data-testid="grid-row">{y.labels[r]}</th>}
                  {row.map((cell) => (cell ? <td key={cell.index}><Cell cell={cell} onOpen={() => setOpen(openIndex(cell))} /></td> : null))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {open !== null && entries[open] && (
        <Viewer
          items={entries}
          index={open}
          onIndex={setOpen}
          onClose={() => setOpen(null)}
          onDelete={async (e) => {
            const res = await apiFetch(`/api/inference/outputs/${encodeURIComponent(e.name)}?job=${encodeURIComponent(jobId ?? '')}`, { method: 'DELETE' });
            if (!res.ok) throw new Error(errorMessage(await res.json().catch(() => null)));
            setOpen(null);
          }}
          onReuse={(e) => {
            onReuse(e);
            setOpen(null);
          }}
          jobId={jobId}
          online={online}
        />
      )}
    </div>
  );
}
