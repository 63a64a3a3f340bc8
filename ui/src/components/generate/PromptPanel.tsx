'use client';
/** Prompt and sampling settings; fields follow the arch's modality (size for images/video, frames/fps, duration). */
import { useState } from 'react';
import { apiFetch, errorMessage } from '@/utils/api';
import type { ArchInfo } from '@/utils/types';
import { type SampleForm, type StreamForm, snap } from './formState';

interface Props {
  arch: ArchInfo | undefined;
  jobId: string | null;
  sample: SampleForm;
  stream: StreamForm;
  onSample: (s: SampleForm) => void;
  onStream: (s: StreamForm) => void;
  disabled: boolean;
}

function NumberField(props: {
  id: keyof SampleForm | 'every_n_steps';
  label: string;
  value: number;
  onChange: (v: number) => void;
  onBlur?: () => void;
  step?: number;
  min?: number;
  max?: number;
  disabled: boolean;
  hint?: string;
}) {
  return (
    <div>
      <label className="label" htmlFor={props.id}>
        {props.label}
      </label>
      <input
        id={props.id}
        type="number"
        className="input"
        value={Number.isFinite(props.value) ? props.value : ''}
        step={props.step ?? 1}
        min={props.min}
        max={props.max}
        disabled={props.disabled}
        onChange={(e) => props.onChange(e.target.value === '' ? NaN : Number(e.target.value))}
        onBlur={props.onBlur}
        data-testid={props.id}
      />
      {props.hint && <div className="mt-0.5 text-xs text-amber-400">{props.hint}</div>}
    </div>
  );
}

export default function PromptPanel({ arch, jobId, sample, stream, onSample, onStream, disabled }: Props) {
  const [upload, setUpload] = useState<{ preview: string; info: string } | null>(null);
  const [uploadError, setUploadError] = useState('');
  const div = arch?.divisibility ?? 8;
  const modality = arch?.modality ?? 'image';
  const set = <K extends keyof SampleForm>(key: K, value: SampleForm[K]) => onSample({ ...sample, [key]: value });
  const snapHint = (v: number) => (Number.isFinite(v) && snap(v, div) !== v ? `will snap to ${snap(v, div)}` : undefined);

  async function uploadControl(file: File) {
    setUploadError('');
    const form = new FormData();
    form.append('file', file);
    const res = await apiFetch(`/api/inference/assets?job=${encodeURIComponent(jobId ?? '')}`, { method: 'POST', body: form });
    const body = await res.json().catch(() => null);
    if (!res.ok) return setUploadError(errorMessage(body) || `upload failed (HTTP ${res.status})`);
    setUpload({ preview: URL.createObjectURL(file), info: `${body.width}×${body.height}` });
    set('ctrl_img', body.id);
  }

  return (
    <section className="card mb-4" data-testid="prompt-panel">
      <h2 className="mb-3 text-sm font-semibold">Prompt</h2>
      <label className="label" htmlFor="prompt">
        Prompt
      </label>
      <textarea id="prompt" className="input mb-2 h-20 resize-y" value={sample.prompt} disabled={disabled} onChange={(e) => set('prompt', e.target.value)} data-testid="prompt" />
      <label className="label" htmlFor="negative_prompt">
        Negative prompt
      </label>
      <textarea id="negative_prompt" className="input mb-3 h-12 resize-y" value={sample.negative_prompt} disabled={disabled} onChange={(e) => set('negative_prompt', e.target.value)} />

      <div className="grid grid-cols-2 gap-2">
        {modality !== 'audio' && (
          <>
            <NumberField id="width" label="Width" value={sample.width} step={div} min={div} disabled={disabled} onChange={(v) => set('width', v)} onBlur={() => set('width', snap(sample.width, div))} hint={snapHint(sample.width)} />
            <NumberField id="height" label="Height" value={sample.height} step={div} min={div} disabled={disabled} onChange={(v) => set('height', v)} onBlur={() => set('height', snap(sample.height, div))} hint={snapHint(sample.height)} />
          </>
        )}
        <NumberField id="num_inference_steps" label="Steps" value={sample.num_inference_steps} min={1} max={500} disabled={disabled} onChange={(v) => set('num_inference_steps', v)} />
        <NumberField id="guidance_scale" label="CFG" value={sample.guidance_scale} step={0.5} min={0} disabled={disabled} onChange={(v) => set('guidance_scale', v)} />
        <div>
          <NumberField id="seed" label="Seed (-1 random)" value={sample.seed} min={-1} disabled={disabled} onChange={(v) => set('seed', v)} />
        </div>
        <div className="flex items-end">
          <button type="button" className="btn-ghost w-full" disabled={disabled} onClick={() => set('seed', Math.floor(Math.random() * 2 ** 32))}>
            Random seed
          </button>
        </div>
        {modality === 'video' && (
          <>
            <NumberField id="num_frames" label="Frames" value={sample.num_frames} min={1} disabled={disabled} onChange={(v) => set('num_frames', v)} />
            <NumberField id="fps" label="FPS" value={sample.fps} min={1} disabled={disabled} onChange={(v) => set('fps', v)} />
          </>
        )}
        {modality === 'audio' && (
          <NumberField id="duration_s" label="Duration (s)" value={sample.duration_s} step={0.5} min={0.5} disabled={disabled} onChange={(v) => set('duration_s', v)} />
        )}
        <div>
          <label className="label" htmlFor="output_ext">
            Format
          </label>
          <select id="output_ext" className="input" value={sample.output_ext} disabled={disabled} onChange={(e) => set('output_ext', e.target.value)} data-testid="output_ext">
            {(arch?.output_exts ?? [sample.output_ext]).map((ext) => (
              <option key={ext}>{ext}</option>
            ))}
          </select>
        </div>
      </div>

      {arch && arch.control_images > 0 && (
        <div className="mt-3">
          <label className="label" htmlFor="ctrl_img">
            Control image (required)
          </label>
          <input id="ctrl_img" type="file" accept="image/png,image/jpeg,image/webp,image/bmp" className="text-sm" disabled={disabled || !jobId} onChange={(e) => e.target.files?.[0] && uploadControl(e.target.files[0])} data-testid="ctrl-img" />
          {upload && (
            <div className="mt-2 flex items-center gap-2 text-xs text-gray-400">
              <img src={upload.preview} alt="control" className="h-12 w-12 rounded object-cover" />
              uploaded {upload.info}
            </div>
          )}
          {uploadError && <div className="mt-1 text-xs text-rose-400">{uploadError}</div>}
        </div>
      )}

      <details className="mt-3 text-sm">
        <summary className="cursor-pointer text-gray-400">Preview stream</summary>
        <div className="mt-2 grid grid-cols-2 gap-2">
          <div>
            <label className="label" htmlFor="latents">
              Latents
            </label>
            <select id="latents" className="input" value={stream.latents} disabled={disabled} onChange={(e) => onStream({ ...stream, latents: e.target.value as StreamForm['latents'] })}>
              <option value="x0">x0 (denoised estimate)</option>
              <option value="raw">raw (x_t)</option>
              <option value="none">none</option>
            </select>
          </div>
          <div>
            <label className="label" htmlFor="every_n_steps">
              Every N steps
            </label>
            <input id="every_n_steps" type="number" min={1} className="input" value={stream.every_n_steps} disabled={disabled} onChange={(e) => onStream({ ...stream, every_n_steps: Math.max(1, Number(e.target.value) || 1) })} />
          </div>
        </div>
      </details>
    </section>
  );
}
