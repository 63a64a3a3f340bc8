'use client';
/**
 * The start image of image-to-image and inpainting, shown where the family lists those tasks (GET /models
 * `tasks`): set by a drop, a paste, a picked file or "Use as input" on a gallery result (sent as its path on the
 * engine's machine, nothing uploaded); a file is uploaded to the engine's POST /assets. Strength (0-1), and where
 * the family inpaints a mask painted over the picture (MaskEditor), its blur and outpaint margins. Setting an
 * image sets the size to its own, snapped to the family, as A1111's img2img starts.
 */
import { type Dispatch, type MutableRefObject, type SetStateAction, useCallback, useEffect, useRef, useState } from 'react';
import { useAssetUpload } from '@/hooks/useAssetUpload';
import { imageOf } from '@/utils/imageFiles';
import { OUTPUT_DRAG_TYPE, draggedOutput } from '@/utils/outputDrag';
import type { ArchInfo } from '@/utils/types';
import { type ControlRef, type SampleForm, controlSlots, snap } from './formState';
import FilePick from './FilePick';
import MaskEditor, { type MaskHandle } from './MaskEditor';
import OutpaintFrame from './OutpaintFrame';
import StrengthSlider from './StrengthSlider';
import { DEFAULT_INPAINT_PADDING, DEFAULT_MASK_BLUR, type InpaintArea, NO_OUTPAINT, OUTPAINT_SIDES, canInpaint, effectiveStrength, outpaintSize, outpaints, startProblem } from './fromImage';

const ACCEPT = 'image/png,image/jpeg,image/webp,image/bmp';

interface Props {
  arch: ArchInfo;
  jobId: string | null;
  sample: SampleForm;
  onSample: Dispatch<SetStateAction<SampleForm>>;
  mask: MutableRefObject<MaskHandle | null>;
  onUploading: (uploading: boolean) => void;
  disabled: boolean;
}

export default function StartImage({ arch, jobId, sample, onSample, mask, onUploading, disabled }: Props) {
  const uploads = useAssetUpload(jobId, disabled, onUploading);
  const { pending, error, setError } = uploads;
  const [painted, setPainted] = useState(false);
  const [natural, setNatural] = useState<{ width: number; height: number } | null>(null);
  const image = sample.init_image;
  const inpaint = canInpaint(arch);
  const div = arch.divisibility;
  const sizeFromImage = useRef(false); // a dropped gallery result's size is known once it loads

  const loaded = (width: number, height: number) => {
    setNatural({ width, height });
    if (!sizeFromImage.current) return;
    sizeFromImage.current = false;
    onSample((s) => ({ ...s, width: snap(width, div), height: snap(height, div) }));
  };

  /** The start image, and the form's size set to its own (snapped) when it is known. */
  const setImage = useCallback(
    (ref: ControlRef | null, width?: number, height?: number) => {
      setError('');
      setPainted(false);
      setNatural(width && height ? { width, height } : null);
      onSample((s) => {
        if (s.init_image?.preview.startsWith('blob:') && s.init_image.preview !== ref?.preview) URL.revokeObjectURL(s.init_image.preview);
        const sized = ref && width && height ? { width: snap(width, div), height: snap(height, div) } : {};
        return { ...s, init_image: ref, ...sized };
      });
    },
    [onSample, div],
  );

  const upload = (file: File) =>
    uploads.upload(file, (asset) =>
      setImage({ ref: asset.id, preview: URL.createObjectURL(file), info: `uploaded ${asset.width}×${asset.height}` }, asset.width, asset.height),
    );

  // Ctrl+V of an image outside a text field sets the start image (an edit family's control slots take it there)
  const uploadRef = useRef(upload);
  uploadRef.current = upload;
  const pasteHere = controlSlots(arch) === 0;
  useEffect(() => {
    if (!pasteHere) return;
    const onPaste = (e: ClipboardEvent) => {
      const file = e.defaultPrevented ? null : imageOf(e.clipboardData?.items);
      if (!file) return;
      e.preventDefault();
      void uploadRef.current(file);
    };
    window.addEventListener('paste', onPaste);
    return () => window.removeEventListener('paste', onPaste);
  }, [pasteHere]);

  const setStart = <K extends 'strength' | 'mask_blur' | 'inpaint_area' | 'inpaint_padding'>(key: K, value: SampleForm[K]) => onSample((s) => ({ ...s, [key]: value }));
  const setSide = (side: (typeof OUTPAINT_SIDES)[number], v: number) => onSample((s) => ({ ...s, outpaint: { ...(s.outpaint ?? NO_OUTPAINT), [side]: v } }));
  const outpaint = sample.outpaint ?? NO_OUTPAINT;
  const blur = sample.mask_blur ?? DEFAULT_MASK_BLUR;
  const area = sample.inpaint_area ?? 'whole';
  const padding = sample.inpaint_padding ?? DEFAULT_INPAINT_PADDING;
  const masked = inpaint && painted;
  const strength = effectiveStrength(sample.strength, masked);
  const problem = startProblem(arch, sample, masked);
  const grown = natural && outpaints(outpaint) ? outpaintSize(natural.width, natural.height, outpaint) : null;

  return (
    <section
      className="card mb-4"
      data-testid="start-image"
      data-ref={image?.ref ?? ''}
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
          setImage({ ref: result.path, preview: result.url, info: `gallery result ${result.name}` });
          sizeFromImage.current = true;
          return;
        }
        const file = imageOf(e.dataTransfer.files);
        if (file) void upload(file);
      }}
    >
      <div className={`flex items-center gap-2 ${image ? 'mb-2' : 'mb-1'}`}>
        <h2 className="text-sm font-semibold" title={inpaint ? 'image-to-image, inpainting, outpainting' : 'image-to-image'}>
          Start image
        </h2>
        {image && (
          <button type="button" className="btn-ghost ml-auto px-2 py-0.5 text-xs" disabled={disabled} onClick={() => setImage(null)} data-testid="start-image-clear">
            Clear
          </button>
        )}
      </div>
      {image ? (
        <>
          {inpaint ? (
            <MaskEditor
              src={image.preview}
              alt="start image"
              handle={mask}
              onPainted={setPainted}
              onSize={loaded}
              disabled={disabled}
            />
          ) : (
            <img
              src={image.preview}
              alt="start image"
              className="block h-auto w-full rounded [image-rendering:pixelated]"
              onLoad={(e) => loaded(e.currentTarget.naturalWidth, e.currentTarget.naturalHeight)}
              data-testid="start-image-preview"
            />
          )}
          <div className="mt-1 truncate text-xs text-gray-400" title={image.ref} data-testid="start-image-info">
            {image.info}
            {natural ? ` · ${natural.width}×${natural.height}` : ''}
          </div>
        </>
      ) : (
        <div
          tabIndex={0}
          role="group"
          aria-label="start image: drop or paste an image"
          className="rounded border border-dashed border-gray-600 px-2 py-1 text-xs text-gray-400 outline-none focus:border-sky-500"
          onPaste={(e) => {
            const file = imageOf(e.clipboardData.items);
            if (!file) return;
            e.preventDefault();
            void upload(file);
          }}
          data-testid="start-image-zone"
        >
          {pending ? (
            'uploading…'
          ) : (
            <>
              Optional: drop, paste, <em>Use as input</em> on a result, or{' '}
              <label className="cursor-pointer text-sky-400 hover:underline" htmlFor="start-image-file">
                choose a file
              </label>
            </>
          )}
        </div>
      )}
      <FilePick id="start-image-file" accept={ACCEPT} disabled={disabled || !jobId} onFile={(file) => void upload(file)} />
      {error && <div className="mt-1 text-xs text-rose-400" data-testid="start-image-error">{error}</div>}

      {image && (
        <div className="mt-2 space-y-2">
          <StrengthSlider
            id="strength"
            value={strength}
            picked={(sample.strength ?? null) !== null}
            what="start image"
            disabled={disabled}
            onChange={(v) => setStart('strength', v)}
          />
          {inpaint && (
            <div className="grid grid-cols-2 gap-2">
              <div>
                <label className="label" htmlFor="mask_blur">
                  Mask blur (px)
                </label>
                <input id="mask_blur" type="number" min={0} max={64} className="input" value={Number.isFinite(blur) ? blur : ''} disabled={disabled} onChange={(e) => setStart('mask_blur', e.target.value === '' ? NaN : Number(e.target.value))} data-testid="mask_blur" />
              </div>
              <div className="flex items-end text-xs text-gray-400" data-testid="outpaint-size">
                {grown ? `outpainted to ${grown.width}×${grown.height}` : ''}
              </div>
            </div>
          )}
          {inpaint && (
            <div className="grid grid-cols-2 gap-2">
              <div>
                <label className="label" htmlFor="inpaint_area">
                  Inpaint area
                </label>
                <select
                  id="inpaint_area"
                  className="input"
                  value={area}
                  disabled={disabled}
                  onChange={(e) => setStart('inpaint_area', e.target.value as InpaintArea)}
                  title="Only masked: the mask's box (plus padding) is repainted at the width and height above, then pasted back; the result keeps the start image's size"
                  data-testid="inpaint_area"
                >
                  <option value="whole">Whole picture</option>
                  <option value="only_masked">Only masked</option>
                </select>
              </div>
              {area === 'only_masked' && (
                <div>
                  <label className="label" htmlFor="inpaint_padding">
                    Padding (px)
                  </label>
                  <input id="inpaint_padding" type="number" min={0} max={1024} className="input" value={Number.isFinite(padding) ? padding : ''} disabled={disabled} onChange={(e) => setStart('inpaint_padding', e.target.value === '' ? NaN : Number(e.target.value))} data-testid="inpaint_padding" />
                </div>
              )}
            </div>
          )}
          {inpaint && (
            <fieldset>
              <legend className="label">Outpaint (px added on each side)</legend>
              <div className="grid grid-cols-4 gap-1">
                {OUTPAINT_SIDES.map((side) => (
                  <label key={side} className="text-xs text-gray-400">
                    {side[0].toUpperCase() + side.slice(1)}
                    <input
                      type="number"
                      min={0}
                      max={2048}
                      step={div}
                      className="input px-1"
                      value={Number.isFinite(outpaint[side]) ? outpaint[side] : ''}
                      disabled={disabled}
                      onChange={(e) => setSide(side, e.target.value === '' ? 0 : Number(e.target.value))}
                      aria-label={`Outpaint ${side} (px)`}
                      data-testid={`outpaint-${side}`}
                    />
                  </label>
                ))}
              </div>
              {natural && image && (
                <OutpaintFrame
                  src={image.preview}
                  width={natural.width}
                  height={natural.height}
                  outpaint={outpaint}
                  divisibility={div}
                  onChange={(o) => onSample((s) => ({ ...s, outpaint: o }))}
                  disabled={disabled}
                />
              )}
            </fieldset>
          )}
          {problem && <div className="text-xs text-amber-400" data-testid="start-image-problem">{problem}</div>}
        </div>
      )}
    </section>
  );
}
