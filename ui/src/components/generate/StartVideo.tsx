'use client';
/**
 * The start video of video-to-video, shown where the family lists that task (GET /models `tasks`: Wan 2.1/2.2,
 * LTX-Video): an mp4 or animated WebP picked or dropped (uploaded to the engine's POST /assets, which decodes every
 * frame to verify it), or a gallery video dropped or sent with "Use as input" (its path, nothing uploaded). The
 * engine fits the clip to the form's frames and size (toolkit/models/from_video.py); the strength slider says how
 * much of it is re-noised, as for a start image.
 */
import type { Dispatch, SetStateAction } from 'react';
import { useAssetUpload } from '@/hooks/useAssetUpload';
import { OUTPUT_DRAG_TYPE, draggedOutput } from '@/utils/outputDrag';
import FilePick from './FilePick';
import { mediaKind } from './Media';
import type { ControlRef, SampleForm } from './formState';
import { effectiveStrength } from './fromImage';
import StrengthSlider from './StrengthSlider';

const ACCEPT = 'video/mp4,image/webp,image/gif';

interface Props {
  jobId: string | null;
  sample: SampleForm;
  onSample: Dispatch<SetStateAction<SampleForm>>;
  onUploading: (uploading: boolean) => void;
  disabled: boolean;
}

/** A file the browser plays in a <video> (a gallery mp4, or an uploaded one); an animated WebP or GIF is an <img>. */
const playsAsVideo = (ref: ControlRef) => mediaKind(ref.ref) === 'video' || ref.info.startsWith('uploaded video');

export default function StartVideo({ jobId, sample, onSample, onUploading, disabled }: Props) {
  const uploads = useAssetUpload(jobId, disabled, onUploading);
  const { pending, error, setError } = uploads;
  const video = sample.init_video ?? null;
  const strength = effectiveStrength(sample.strength, false);

  const setVideo = (ref: ControlRef | null) => {
    setError('');
    onSample((s) => {
      const old = s.init_video?.preview;
      if (old?.startsWith('blob:') && old !== ref?.preview) URL.revokeObjectURL(old);
      return { ...s, init_video: ref };
    });
  };

  const upload = (file: File) =>
    uploads.upload(file, (asset) => {
      const kind = file.type === 'video/mp4' ? 'video' : 'animation';
      setVideo({ ref: asset.id, preview: URL.createObjectURL(file), info: `uploaded ${kind} ${asset.width}×${asset.height}` });
    });

  return (
    <section
      className="card mb-4"
      data-testid="start-video"
      data-ref={video?.ref ?? ''}
      onDragOver={(e) => {
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
      }}
      onDrop={(e) => {
        e.preventDefault(); // taken: the page-wide drop (restore settings) leaves it alone
        if (disabled) return;
        const result = e.dataTransfer.types.includes(OUTPUT_DRAG_TYPE) ? draggedOutput((t) => e.dataTransfer.getData(t)) : null;
        if (result) return setVideo({ ref: result.path, preview: result.url, info: `gallery result ${result.name}` });
        const file = e.dataTransfer.files[0];
        if (file) void upload(file);
      }}
    >
      <div className={`flex items-center gap-2 ${video ? 'mb-2' : 'mb-1'}`}>
        <h2 className="text-sm font-semibold" title="video-to-video">
          Start video
        </h2>
        {video && (
          <button type="button" className="btn-ghost ml-auto px-2 py-0.5 text-xs" disabled={disabled} onClick={() => setVideo(null)} data-testid="start-video-clear">
            Clear
          </button>
        )}
      </div>
      {video ? (
        <>
          {playsAsVideo(video) ? (
            <video src={video.preview} className="block h-auto w-full rounded" muted loop autoPlay playsInline data-testid="start-video-preview" />
          ) : (
            <img src={video.preview} alt="start video" className="block h-auto w-full rounded" data-testid="start-video-preview" />
          )}
          <div className="mt-1 truncate text-xs text-gray-400" title={video.ref} data-testid="start-video-info">
            {video.info} · fitted to the frames and size below
          </div>
        </>
      ) : (
        <div className="rounded border border-dashed border-gray-600 px-2 py-1 text-xs text-gray-400" data-testid="start-video-zone">
          {pending ? (
            'uploading…'
          ) : (
            <>
              Optional: drop an mp4, <em>Use as input</em> on a video result, or{' '}
              <label className="cursor-pointer text-sky-400 hover:underline" htmlFor="start-video-file">
                choose a file
              </label>
            </>
          )}
        </div>
      )}
      <FilePick id="start-video-file" accept={ACCEPT} disabled={disabled || !jobId} onFile={(file) => void upload(file)} />
      {error && <div className="mt-1 text-xs text-rose-400" data-testid="start-video-error">{error}</div>}
      {video && (
        <div className="mt-2">
          <StrengthSlider
            id="video-strength"
            value={strength}
            picked={(sample.strength ?? null) !== null}
            what="start video"
            disabled={disabled}
            onChange={(v) => onSample((s) => ({ ...s, strength: v }))}
          />
        </div>
      )}
    </section>
  );
}
