'use client';
/**
 * Which family and checkpoint: the arch list comes from the engine's GET /models, grouped as AI Toolkit groups
 * it, with each family's `arch:tag` variants (archOptions.ts); the model field suggests the entry's published
 * checkpoint and the diffusers folders and single files under the engine's model roots (GET /checkpoints), and
 * takes any hub id.
 */
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import type { ArchInfo, CheckpointEntry } from '@/utils/types';
import { archChoice, archOptionGroups, familyOf } from './archOptions';
import { BUILTIN_MODELS, type ModelForm } from './formState';
import LoraPicker from './LoraPicker';

const DTYPES = ['float16', 'bfloat16', 'float32'];

interface Props {
  archs: ArchInfo[];
  model: ModelForm;
  onArch: (arch: string) => void;
  onChange: (model: ModelForm) => void;
  disabled: boolean;
  jobId: string | null;
  online: boolean;
}

export default function ModelPanel({ archs, model, onArch, onChange, disabled, jobId, online }: Props) {
  const arch = archChoice(archs, model.arch);
  const family = familyOf(model.arch);
  const checkpoints = usePoll(
    () => apiJson<{ checkpoints: CheckpointEntry[] }>(`/api/inference/checkpoints?job=${encodeURIComponent(jobId ?? '')}`).then((r) => r.checkpoints),
    60000,
    online,
  );
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
        list="checkpoint-options"
        data-testid="model-path"
      />
      <datalist id="checkpoint-options" data-testid="checkpoint-options">
        {arch?.hub_id && <option value={arch.hub_id}>published checkpoint (Hugging Face)</option>}
        <option value={`tiny:${family}`}>offline tiny checkpoint (random weights)</option>
        {Object.entries(BUILTIN_MODELS)
          .filter(([, b]) => b.arch === family)
          .map(([path]) => (
            <option key={path} value={path}>
              trained demo checkpoint shipped with the toolkit
            </option>
          ))}
        {(checkpoints.data ?? []).map((c) => (
          <option key={c.path} value={c.path}>
            {c.kind === 'diffusers' ? `${c.name} (diffusers folder${c.pipeline ? `, ${c.pipeline}` : ''})` : `${c.name} (single file)`}
          </option>
        ))}
      </datalist>
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
