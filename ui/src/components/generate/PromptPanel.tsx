'use client';
/** The sampling settings beside the picture (the prompt itself is in the bar under it, PromptBar.tsx); fields
 * follow the arch's modality (size for images/video, frames/fps, duration). */
import type { Dispatch, SetStateAction } from 'react';
import type { ArchInfo, Speed } from '@/utils/types';
import ControlImages from './ControlImages';
import type { NumberKey } from './formChecks';
import { SPEED_LABELS, type SampleForm, type StreamForm, controlSlots, nativeResolution, snap, speedsOf, takesLyrics } from './formState';
import SamplerFields from './SamplerFields';
import SizePresets from './SizePresets';

interface Props {
  arch: ArchInfo | undefined;
  modelPath: string;
  jobId: string | null;
  sample: SampleForm;
  stream: StreamForm;
  onSample: Dispatch<SetStateAction<SampleForm>>;
  onStream: (s: StreamForm) => void;
  errors: Partial<Record<NumberKey, string>>;
  onUploading: (uploading: boolean) => void;
  disabled: boolean;
}

function NumberField(props: {
  id: NumberKey;
  label: string;
  value: number;
  onChange: (v: number) => void;
  onBlur?: () => void;
  step?: number;
  min?: number;
  max?: number;
  disabled: boolean;
  hint?: string;
  error?: string;
}) {
  return (
    <div>
      <label className="label" htmlFor={props.id}>
        {props.label}
      </label>
      <input
        id={props.id}
        type="number"
        className={`input ${props.error ? 'border-rose-500' : ''}`}
        value={Number.isFinite(props.value) ? props.value : ''}
        step={props.step ?? 1}
        min={props.min}
        max={props.max}
        disabled={props.disabled}
        aria-invalid={Boolean(props.error)}
        aria-describedby={props.error ? `${props.id}-error` : undefined}
        onChange={(e) => props.onChange(e.target.value === '' ? NaN : Number(e.target.value))}
        onBlur={props.onBlur}
        data-testid={props.id}
      />
      {props.error ? (
        <div id={`${props.id}-error`} className="mt-0.5 text-xs text-rose-400" data-testid={`${props.id}-error`}>
          {props.error}
        </div>
      ) : (
        props.hint && <div className="mt-0.5 text-xs text-amber-400">{props.hint}</div>
      )}
    </div>
  );
}

export default function PromptPanel(props: Props) {
  const { arch, modelPath, jobId, sample, stream, onSample, onStream, errors, onUploading, disabled } = props;
  const div = arch?.divisibility ?? 8;
  const modality = arch?.modality ?? 'image';
  const set = <K extends keyof SampleForm>(key: K, value: SampleForm[K]) => onSample((s) => ({ ...s, [key]: value }));
  const snapHint = (v: number) => (Number.isFinite(v) && snap(v, div) !== v ? `will snap to ${snap(v, div)}` : undefined);
  // an empty field stays empty on blur (its error says so) rather than snapping to one step
  const snapOnBlur = (key: 'width' | 'height') => () => Number.isFinite(sample[key]) && set(key, snap(sample[key], div));

  return (
    <section className="card mb-4" data-testid="prompt-panel">
      <h2 className="mb-3 text-sm font-semibold">Sampling</h2>
      <label className="label" htmlFor="negative_prompt">
        Negative prompt
      </label>
      <textarea id="negative_prompt" className="input mb-3 h-12 resize-y" value={sample.negative_prompt} disabled={disabled} onChange={(e) => set('negative_prompt', e.target.value)} data-testid="negative_prompt" />
      {arch && takesLyrics(arch) && (
        <>
          <label className="label" htmlFor="lyrics">
            Lyrics ([verse], [chorus]… ; empty for instrumental)
          </label>
          <textarea id="lyrics" className="input mb-3 h-24 resize-y font-mono text-xs" value={sample.lyrics} disabled={disabled} onChange={(e) => set('lyrics', e.target.value)} data-testid="lyrics" />
        </>
      )}

      <div className="grid grid-cols-2 gap-2">
        {modality !== 'audio' && (
          <>
            {arch && (
              <SizePresets
                native={nativeResolution(arch, modelPath)}
                divisibility={div}
                width={sample.width}
                height={sample.height}
                disabled={disabled}
                onPick={(width, height) => onSample((s) => ({ ...s, width, height }))}
              />
            )}
            <NumberField id="width" label="Width" value={sample.width} step={div} min={div} disabled={disabled} onChange={(v) => set('width', v)} onBlur={snapOnBlur('width')} hint={snapHint(sample.width)} error={errors.width} />
            <NumberField id="height" label="Height" value={sample.height} step={div} min={div} disabled={disabled} onChange={(v) => set('height', v)} onBlur={snapOnBlur('height')} hint={snapHint(sample.height)} error={errors.height} />
          </>
        )}
        <NumberField id="num_inference_steps" label="Steps" value={sample.num_inference_steps} min={arch?.min_steps ?? 1} max={500} disabled={disabled} onChange={(v) => set('num_inference_steps', v)} error={errors.num_inference_steps} />
        <NumberField id="guidance_scale" label="CFG" value={sample.guidance_scale} step={0.5} min={0} disabled={disabled} onChange={(v) => set('guidance_scale', v)} error={errors.guidance_scale} />
        <SamplerFields arch={arch} sample={sample} disabled={disabled} onChange={(sampler, scheduler) => onSample((s) => ({ ...s, sampler, scheduler }))} />
        <NumberField id="seed" label="Seed (-1 random)" value={sample.seed} min={-1} disabled={disabled} onChange={(v) => set('seed', v)} error={errors.seed} />
        <div className="flex items-end">
          <button type="button" className="btn-ghost w-full" disabled={disabled} onClick={() => set('seed', Math.floor(Math.random() * 2 ** 32))}>
            Random seed
          </button>
        </div>
        {modality === 'video' && (
          <>
            <NumberField id="num_frames" label="Frames" value={sample.num_frames} min={1} disabled={disabled} onChange={(v) => set('num_frames', v)} error={errors.num_frames} />
            <NumberField id="fps" label="FPS" value={sample.fps} min={1} disabled={disabled} onChange={(v) => set('fps', v)} error={errors.fps} />
          </>
        )}
        {modality === 'audio' && (
          <NumberField id="duration_s" label="Duration (s)" value={sample.duration_s} step={0.5} min={0.5} disabled={disabled} onChange={(v) => set('duration_s', v)} error={errors.duration_s} />
        )}
        <NumberField id="batch_count" label="Batch count" value={sample.batch_count} min={1} max={16} disabled={disabled} onChange={(v) => set('batch_count', v)} error={errors.batch_count} hint={sample.batch_count > 1 ? 'seeds seed, seed+1, …' : undefined} />
        {arch && speedsOf(arch).length > 1 && (
          <div>
            <label className="label" htmlFor="speed">
              Speed
            </label>
            <select id="speed" className="input" value={sample.speed ?? 'lossless'} disabled={disabled} onChange={(e) => set('speed', e.target.value as Speed)} data-testid="speed" title="fp8 and cache trade a little fidelity for time (docs/BENCHMARKS.md, Fast tiers)">
              {speedsOf(arch).map((speed) => (
                <option key={speed} value={speed}>
                  {SPEED_LABELS[speed]}
                </option>
              ))}
            </select>
          </div>
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

      {arch && controlSlots(arch) > 0 && (
        <ControlImages
          jobId={jobId}
          slots={controlSlots(arch)}
          required={arch.control_images}
          value={sample.ctrl_imgs}
          onChange={(ctrl_imgs) => set('ctrl_imgs', ctrl_imgs)}
          onUploading={onUploading}
          disabled={disabled}
        />
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
