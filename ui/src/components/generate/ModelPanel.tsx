'use client';
/**
 * Which family and checkpoint. The arch list comes from the engine's GET /models, grouped as AI Toolkit groups
 * it, with each family's `arch:tag` variants (archOptions.ts). The model library (GET /checkpoints, library.ts)
 * lists the checkpoints under the engine's model roots with the family read from each one, its size and newest
 * result, then each family's published checkpoint and the tiny and builtin ones; picking one sets the arch to
 * its family and its defaults (dtype for this engine's device, the size it was trained at). The field still
 * takes any hub id or path.
 */
import { useEffect, useMemo, useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import type { ArchInfo } from '@/utils/types';
import { archChoice, archOptionGroups, familyOf } from './archOptions';
import type { ModelForm } from './formState';
import { type CheckpointListing, type LibraryItem, type ModelPick, archForPick, libraryItems, pickOf, searchLibrary } from './library';
import LoraPicker from './LoraPicker';

const DTYPES = ['float16', 'bfloat16', 'float32'];
const SHOWN = 60; // rows rendered at once: the search narrows the rest

interface Props {
  archs: ArchInfo[];
  model: ModelForm;
  onArch: (arch: string) => void;
  onChange: (model: ModelForm) => void;
  /** the form's own pick (useGenerateForm.pickModel: arch, checkpoint, dtype and size at once) */
  onPick?: (pick: ModelPick) => void;
  disabled: boolean;
  jobId: string | null;
  online: boolean;
}

export default function ModelPanel({ archs, model, onArch, onChange, onPick, disabled, jobId, online }: Props) {
  const arch = archChoice(archs, model.arch);
  const family = familyOf(model.arch);
  const [query, setQuery] = useState('');
  const listing = usePoll(
    () => apiJson<CheckpointListing>(`/api/inference/checkpoints?job=${encodeURIComponent(jobId ?? '')}`),
    60000,
    online,
  );
  const refresh = () => void apiJson<CheckpointListing>(`/api/inference/checkpoints?refresh=1&job=${encodeURIComponent(jobId ?? '')}`).then(() => listing.refresh());
  const items = useMemo(() => libraryItems(listing.data, archs), [listing.data, archs]);
  const shown = searchLibrary(items, query);

  // A CPU engine computes in float32 whatever the form asks: a form asking float16 there names another model
  // than the one the engine loaded at start, which it then loads again.
  const engineDtype = listing.data?.dtype;
  useEffect(() => {
    if (engineDtype === 'float32' && model.dtype === 'float16') onChange({ ...model, dtype: 'float32' });
  }, [engineDtype, model, onChange]);

  const pick = (item: LibraryItem) => {
    const p = pickOf(item);
    if (onPick) return onPick(p);
    const next = archForPick(p, archs, model.arch);
    if (next !== model.arch) onArch(next);
    onChange({ ...model, arch: next, name_or_path: p.name_or_path, ...(p.dtype ? { dtype: p.dtype } : {}) });
  };

  return (
    <section className="card mb-4" data-testid="model-panel">
      <h2 className="mb-3 text-sm font-semibold">Model</h2>
      <label className="label" htmlFor="arch">
        Architecture
      </label>
      <select id="arch" className="input mb-2" value={model.arch} disabled={disabled || !archs.length} onChange={(e) => onArch(e.target.value)} data-testid="arch-select">
        {!archs.length && <option value={model.arch}>{model.arch} (engine offline)</option>}
        {archOptionGroups(archs).map((g) => (
          <optgroup key={g.group} label={g.group}>
            {g.options.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </optgroup>
        ))}
      </select>
      <label className="label" htmlFor="name_or_path">
        Model (hub id, local path, builtin:shapes or tiny:&lt;arch&gt;)
      </label>
      <input
        id="name_or_path"
        className="input mb-2"
        value={model.name_or_path}
        disabled={disabled}
        onChange={(e) => onChange({ ...model, name_or_path: e.target.value })}
        data-testid="model-path"
      />
      <div className="mb-2" data-testid="model-library">
        <div className="flex gap-2">
          <input
            className="input flex-1"
            type="search"
            placeholder={`Search ${items.length} models: name, family, path`}
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            aria-label="search the model library"
            data-testid="model-search"
          />
          <button type="button" className="btn-ghost text-xs" onClick={refresh} disabled={!online} title="look for new checkpoints under the engine's model folders" data-testid="model-refresh">
            refresh
          </button>
        </div>
        <ul className="mt-1 max-h-56 overflow-y-auto rounded border border-gray-800" role="listbox" aria-label="model library">
          {shown.slice(0, SHOWN).map((item) => (
            <li key={item.key}>
              <button
                type="button"
                role="option"
                aria-selected={item.path === model.name_or_path}
                className={`flex w-full items-center gap-2 px-2 py-1 text-left text-sm hover:bg-gray-800 ${item.path === model.name_or_path ? 'bg-gray-800' : ''}`}
                disabled={disabled}
                onClick={() => pick(item)}
                title={item.path}
                data-testid="model-library-item"
                data-path={item.path}
              >
                {item.thumbnail ? (
                  <img src={item.thumbnail} alt="" className="h-8 w-8 shrink-0 rounded object-cover" loading="lazy" data-testid="model-thumbnail" />
                ) : (
                  <span className="h-8 w-8 shrink-0 rounded bg-gray-800" aria-hidden />
                )}
                <span className="min-w-0 flex-1">
                  <span className="block truncate">{item.label}</span>
                  <span className="block truncate text-xs text-gray-500">
                    {item.detail}
                    {item.width ? ` · ${item.width}×${item.height}` : ''}
                  </span>
                </span>
              </button>
            </li>
          ))}
          {!shown.length && <li className="px-2 py-1 text-sm text-gray-500">{online ? 'nothing matches' : 'start an engine to list its models'}</li>}
          {shown.length > SHOWN && <li className="px-2 py-1 text-xs text-gray-500">{shown.length - SHOWN} more: narrow the search</li>}
        </ul>
      </div>
      <label className="label" htmlFor="dtype">
        dtype
      </label>
      <select id="dtype" className="input" value={model.dtype} disabled={disabled} onChange={(e) => onChange({ ...model, dtype: e.target.value })}>
        {DTYPES.map((d) => (
          <option key={d}>{d}</option>
        ))}
      </select>
      <details className="mt-2 text-sm" data-testid="model-advanced">
        <summary className="cursor-pointer text-gray-400">Advanced</summary>
        <div className="mt-2 space-y-1">
          <label className="flex items-center gap-2 text-gray-300" title="8-bit weights (qfloat8) for the denoiser and text encoders: about half the memory">
            <input type="checkbox" checked={model.quantize} disabled={disabled} onChange={(e) => onChange({ ...model, quantize: e.target.checked })} data-testid="model-quantize" />
            Quantize (8-bit weights)
          </label>
          <label className="flex items-center gap-2 text-gray-300" title="keep parts on the CPU until they are needed: slower, fits smaller GPUs">
            <input type="checkbox" checked={model.low_vram} disabled={disabled} onChange={(e) => onChange({ ...model, low_vram: e.target.checked })} data-testid="model-low-vram" />
            Low VRAM (offload idle parts)
          </label>
          <p className="text-xs text-gray-500">Both off: the engine plans memory itself. Either on: your choice replaces its plan.</p>
        </div>
      </details>
      <LoraPicker jobId={jobId} online={online} arch={family} loras={model.loras} onChange={(loras) => onChange({ ...model, loras })} disabled={disabled} />
      {arch && (
        <p className="mt-2 text-xs text-gray-500">
          {arch.native_resolution ? `native ${arch.native_resolution} px · sizes snap to ×${arch.divisibility} · ` : ''}latent{' '}
          {arch.latent.layout} {arch.latent.channels}ch
          {arch.latent.rgb_factors ? '' : ' · no preview factors (min-max view)'}
        </p>
      )}
    </section>
  );
}
