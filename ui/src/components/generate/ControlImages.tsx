'use client';
/**
 * The control images an edit family takes, one drop zone per slot (qwen_image_edit_plus: three; the first ones
 * required). A slot takes a dropped file, a pasted image (Ctrl+V while it has focus, or anywhere else on the
 * page, into the first empty slot) or a picked file; each upload goes to the engine's
 * POST /assets through the proxy and the slot keeps the asset id. A result dragged from the gallery is used
 * where it lies: the slot keeps its path in the engine's output folder, nothing is uploaded (utils/outputDrag.ts).
 */
import { useEffect, useRef, useState } from 'react';
import { apiFetch, errorMessage } from '@/utils/api';
import { imageOf } from '@/utils/imageFiles';
import { OUTPUT_DRAG_TYPE, draggedOutput } from '@/utils/outputDrag';
import FilePick from './FilePick';
import type { ControlRef } from './formState';

const ACCEPT = 'image/png,image/jpeg,image/webp,image/bmp';

interface Props {
  jobId: string | null;
  slots: number;
  required: number;
  value: (ControlRef | null)[];
  onChange: (value: (ControlRef | null)[]) => void;
  onUploading: (uploading: boolean) => void;
  disabled: boolean;
}

export default function ControlImages({ jobId, slots, required, value, onChange, onUploading, disabled }: Props) {
  const [errors, setErrors] = useState<Record<number, string>>({});
  const [pending, setPending] = useState<Record<number, boolean>>({});
  const latest = useRef(value);
  latest.current = value;

  async function upload(slot: number, file: File) {
    if (disabled || !jobId) return;
    setErrors((e) => ({ ...e, [slot]: '' }));
    setPending((p) => ({ ...p, [slot]: true }));
    try {
      const form = new FormData();
      form.append('file', file);
      const res = await apiFetch(`/api/inference/assets?job=${encodeURIComponent(jobId)}`, { method: 'POST', body: form });
      const body = await res.json().catch(() => null);
      if (!res.ok) throw new Error(errorMessage(body) || `upload failed (HTTP ${res.status})`);
      // slots may have changed while uploading: write into the newest list
      const next = Array.from({ length: slots }, (_, i) => latest.current[i] ?? null);
      next[slot] = { ref: body.id, preview: URL.createObjectURL(file), info: `${body.width}×${body.height}` };
      onChange(next);
    } catch (e) {
      setErrors((x) => ({ ...x, [slot]: (e as Error).message }));
    } finally {
      setPending((p) => ({ ...p, [slot]: false }));
    }
  }

  const uploading = Object.values(pending).some(Boolean);
  useEffect(() => onUploading(uploading), [uploading, onUploading]);

  const remove = (slot: number) => {
    const old = value[slot];
    if (old?.preview.startsWith('blob:')) URL.revokeObjectURL(old.preview);
    onChange(Array.from({ length: slots }, (_, i) => (i === slot ? null : (value[i] ?? null))));
  };

  // Ctrl+V of an image anywhere outside a text field lands in the first empty slot (the last one when all are full)
  const uploadRef = useRef(upload);
  uploadRef.current = upload;
  useEffect(() => {
    const onPaste = (e: ClipboardEvent) => {
      const file = e.defaultPrevented ? null : imageOf(e.clipboardData?.items);
      if (!file) return; // text pastes stay with the field that has focus
      e.preventDefault();
      const empty = Array.from({ length: slots }, (_, i) => i).find((i) => !latest.current[i]);
      void uploadRef.current(empty ?? slots - 1, file);
    };
    window.addEventListener('paste', onPaste);
    return () => window.removeEventListener('paste', onPaste);
  }, [slots]);

  return (
    <div className="mt-3" data-testid="control-images">
      <div className="label">
        Control image{slots > 1 ? `s (${required} required, up to ${slots})` : ' (required)'}
      </div>
      <div className={`grid gap-2 ${slots > 1 ? 'grid-cols-3' : 'grid-cols-1'}`}>
        {Array.from({ length: slots }, (_, slot) => {
          const ref = value[slot];
          const id = slot === 0 ? 'ctrl-img' : `ctrl-img-${slot + 1}`;
          return (
            <div
              key={slot}
              tabIndex={0}
              role="group"
              aria-label={`control image ${slot + 1}: drop or paste an image`}
              className="relative flex min-h-24 flex-col items-center justify-center rounded border border-dashed border-gray-600 p-2 text-center text-xs text-gray-400 outline-none focus:border-sky-500"
              onDragOver={(e) => {
                e.preventDefault();
                e.dataTransfer.dropEffect = 'copy';
              }}
              onDrop={(e) => {
                // preventDefault marks it taken: the page-wide drop (restore settings) leaves it alone
                e.preventDefault();
                if (disabled) return;
                const result = e.dataTransfer.types.includes(OUTPUT_DRAG_TYPE) ? draggedOutput((t) => e.dataTransfer.getData(t)) : null;
                if (result) {
                  const next = Array.from({ length: slots }, (_, i) => latest.current[i] ?? null);
                  next[slot] = { ref: result.path, preview: result.url, info: `gallery result ${result.name}` };
                  setErrors((x) => ({ ...x, [slot]: '' }));
                  return onChange(next);
                }
                const file = imageOf(e.dataTransfer.files);
                if (file) void upload(slot, file);
              }}
              onPaste={(e) => {
                const file = imageOf(e.clipboardData.items);
                if (!file) return;
                e.preventDefault();
                void upload(slot, file);
              }}
              data-testid={`${id}-zone`}
              data-ref={ref?.ref ?? ''}
            >
              {ref ? (
                <>
                  {ref.preview ? <img src={ref.preview} alt={`control image ${slot + 1}`} className="h-20 w-20 rounded object-cover" data-testid={`${id}-thumb`} /> : null}
                  <span className="mt-1 max-w-full truncate" title={ref.ref}>
                    {ref.info.includes('×') ? `uploaded ${ref.info}` : ref.info}
                  </span>
                  <button type="button" className="absolute top-1 right-1 rounded bg-gray-800 px-1.5 text-gray-300 hover:text-rose-400" disabled={disabled} onClick={() => remove(slot)} aria-label={`remove control image ${slot + 1}`} data-testid={`${id}-remove`}>
                    ×
                  </button>
                </>
              ) : (
                <span>{pending[slot] ? 'uploading…' : `${slot < required ? 'Required' : 'Optional'}: drop, paste or`}</span>
              )}
              <label className={`mt-1 cursor-pointer text-sky-400 hover:underline ${ref || pending[slot] ? 'sr-only' : ''}`} htmlFor={id}>
                choose a file
              </label>
              <FilePick id={id} accept={ACCEPT} disabled={disabled || !jobId} onFile={(file) => void upload(slot, file)} />
              {errors[slot] && <div className="mt-1 text-rose-400" data-testid={`${id}-error`}>{errors[slot]}</div>}
            </div>
          );
        })}
      </div>
    </div>
  );
}
