'use client';
/**
 * Drop an image made here (or by A1111, Forge, InvokeAI) anywhere on the page to put its settings back into the
 * form; or pick one. Drops a control-image slot takes are left to it (it marks them handled). What came of it is
 * reported to `onStatus`: the page shows it beside the Generate bar rather than where this link happens to be.
 */
import { useEffect, useRef, useState } from 'react';
import { readImageInfo } from '@/utils/imageInfo';
import { type Restored, fromEmbedded } from './restore';

interface Props {
  /** apply the settings; a message when they cannot be (e.g. a family this engine lacks) */
  onRestore: (restored: Restored) => string | null;
  disabled: boolean;
  onStatus: (status: RestoreStatus) => void;
}

export interface RestoreStatus {
  ok: boolean;
  text: string;
}

const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files');

export default function RestoreDrop({ onRestore, disabled, onStatus: setStatus }: Props) {
  const [dragging, setDragging] = useState(false);
  const apply = useRef<(file: File) => Promise<void>>(async () => undefined);

  apply.current = async (file: File) => {
    if (disabled) return setStatus({ ok: false, text: 'Wait for the current run to finish' });
    const restored = fromEmbedded(await readImageInfo(new Uint8Array(await file.arrayBuffer())));
    if (!restored) return setStatus({ ok: false, text: `${file.name} carries no generation settings` });
    const problem = onRestore(restored);
    if (problem) return setStatus({ ok: false, text: `${file.name}: ${problem}` });
    const what = restored.source === 'config' ? 'all settings' : 'settings from its parameters text';
    setStatus({ ok: true, text: `Restored ${what} from ${file.name}` });
  };

  useEffect(() => {
    let depth = 0; // dragenter/leave fire for every child crossed
    const enter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth += 1;
      setDragging(true);
    };
    const leave = () => {
      depth = Math.max(0, depth - 1);
      if (!depth) setDragging(false);
    };
    const over = (e: DragEvent) => {
      if (hasFiles(e)) e.preventDefault(); // else the browser opens the file instead of dropping it
    };
    const drop = (e: DragEvent) => {
      depth = 0;
      setDragging(false);
      if (e.defaultPrevented || !hasFiles(e)) return; // a control-image slot took it
      e.preventDefault();
      const file = Array.from(e.dataTransfer?.files ?? []).find((f) => f.type.startsWith('image/') || /\.(png|jpe?g|webp)$/i.test(f.name));
      if (file) void apply.current(file);
    };
    window.addEventListener('dragenter', enter);
    window.addEventListener('dragleave', leave);
    window.addEventListener('dragover', over);
    window.addEventListener('drop', drop);
    return () => {
      window.removeEventListener('dragenter', enter);
      window.removeEventListener('dragleave', leave);
      window.removeEventListener('dragover', over);
      window.removeEventListener('drop', drop);
    };
  }, []);

  return (
    <div>
      <label className="cursor-pointer whitespace-nowrap text-gray-400 hover:text-gray-200" htmlFor="restore-file" title="Restore settings from an image made here, A1111, Forge or InvokeAI (or drop one on the page)">
        From image…
      </label>
      <input
        id="restore-file"
        type="file"
        accept="image/png,image/jpeg,image/webp"
        className="sr-only"
        onChange={(e) => {
          const file = e.target.files?.[0];
          e.target.value = '';
          if (file) void apply.current(file);
        }}
        data-testid="restore-file"
      />
      {dragging && (
        <div className="pointer-events-none fixed inset-0 z-50 flex items-center justify-center bg-sky-950/60 text-lg text-sky-100" data-testid="restore-overlay">
          Drop an image to restore its settings (or drop it on a control-image slot)
        </div>
      )}
    </div>
  );
}
