'use client';
/**
 * The form's state and where it comes from: remembered settings (localStorage, per arch), the engine's arch
 * defaults, a gallery entry's sidecar ("Reuse") or a dropped file's embedded settings.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { apiFetch } from '@/utils/api';
import { uploadAsset } from '@/utils/assets';
import type { ArchInfo, OutputEntry } from '@/utils/types';
import { type ArchChoice, archChoice, nextModelPath } from './archOptions';
import { type FormMemory, loadMemory, recall, remember, saveMemory } from './formMemory';
import {
  BUILTIN_MODELS, type ControlRef, DEFAULT_MODEL, DEFAULT_SAMPLE, type ModelForm, type SampleForm, type StreamForm, controlSlots, generateBody,
  sampleDefaults, snap, speedFor,
} from './formState';
import { type ModelPick, archForPick } from './library';
import type { MaskHandle } from './MaskEditor';
import type { Restored } from './restore';
import { canInpaint, isVideoResult, startFields, startFromEntry, takesStartImage, takesStartVideo } from './fromImage';

const CPU_DEFAULT = 'builtin:shapes';

/** A server path (a reused reference lives in the engine's assets or output folder) shown through /api/files. */
function controlFromPath(ref: string): ControlRef {
  const isPath = ref.includes('/');
  return { ref, preview: isPath ? `/api/files/${encodeURIComponent(ref)}` : '', info: isPath ? ref.split('/').pop()! : 'asset' };
}

export function useGenerateForm(archs: ArchInfo[], device: string | undefined) {
  const [model, setModel] = useState<ModelForm>(DEFAULT_MODEL);
  const [sample, setSample] = useState<SampleForm>(DEFAULT_SAMPLE);
  const [stream, setStream] = useState<StreamForm>({ latents: 'x0', every_n_steps: 1 });
  const memory = useRef<FormMemory | null>(null);
  const [ready, setReady] = useState(false); // the starting settings are decided: from here on, changes are remembered
  const arch = archChoice(archs, model.arch); // zimage:turbo: Z-Image's facts with the tag's defaults

  /** The form for an arch or `arch:tag`: its remembered settings, else its defaults (the prompt stays). */
  const settingsFor = useCallback(
    (a: ArchChoice, current: { model: ModelForm; sample: SampleForm }) => {
      const keep = {
        prompt: current.sample.prompt,
        negative_prompt: current.sample.negative_prompt,
        ctrl_imgs: current.sample.ctrl_imgs.slice(0, controlSlots(a)),
        // the start image and its settings stay with the picture, whichever family runs it next
        init_image: current.sample.init_image,
        init_video: current.sample.init_video,
        strength: current.sample.strength,
        mask_blur: current.sample.mask_blur,
        inpaint_area: current.sample.inpaint_area,
        inpaint_padding: current.sample.inpaint_padding,
        outpaint: current.sample.outpaint,
      };
      const back = recall(memory.current, a.value, { model: DEFAULT_MODEL, sample: DEFAULT_SAMPLE });
      if (back) {
        const sample = { ...sampleDefaults(a, back.model.name_or_path, back.sample), ...back.sample, ...keep };
        // a field left empty is no checkpoint to come back to: the entry's own, as on a first visit
        const model = back.model.name_or_path ? back.model : { ...back.model, name_or_path: a.hub_id || `tiny:${a.arch}` };
        return { model, sample: { ...sample, speed: speedFor(a, sample.speed) } };
      }
      // an empty field or the previous entry's hub id takes this entry's; tiny:/builtin: follow the family; a
      // path the user typed stays (archOptions.nextModelPath)
      const prev = archChoice(archs, current.model.arch);
      const path = nextModelPath(prev, current.model.name_or_path, a, (p) => BUILTIN_MODELS[p]?.arch);
      return { model: { ...current.model, arch: a.value, name_or_path: path }, sample: { ...sampleDefaults(a, path, current.sample), ...keep } };
    },
    [archs],
  );

  // Before the engine answers, show the remembered form (the engine's arch list confirms it below).
  const shownFromMemory = useRef(false);
  useEffect(() => {
    const m = loadMemory(localStorage);
    const back = m && recall(m, m.arch, { model: DEFAULT_MODEL, sample: DEFAULT_SAMPLE });
    if (!m || !back) return;
    shownFromMemory.current = true;
    setModel(back.model);
    setSample({ ...back.sample, prompt: m.prompt, negative_prompt: m.negative_prompt });
  }, []);

  // The starting form, once the engine's arch list (and so its device) is known: the remembered arch and its
  // settings; else, on a CPU engine, builtin:shapes (it draws something; tiny:sd1's random weights draw noise).
  useEffect(() => {
    if (ready || !archs.length) return;
    memory.current = loadMemory(localStorage);
    const m = memory.current;
    const remembered = m && archChoice(archs, m.arch);
    // what was typed while the engine was still starting is kept: only untouched defaults are replaced
    const prompt = (fallback: string) => (s: SampleForm) => (s.prompt === DEFAULT_SAMPLE.prompt ? fallback : s.prompt);
    if (remembered && shownFromMemory.current) {
      // already on screen since mount, maybe edited since: only make the format one this engine writes
      setSample((s) => (remembered.output_exts.includes(s.output_ext) ? s : { ...s, output_ext: remembered.output_exts[0] }));
    } else if (remembered) {
      setModel((cur) => settingsFor(remembered, { model: cur, sample: DEFAULT_SAMPLE }).model);
      setSample((cur) => ({ ...settingsFor(remembered, { model: DEFAULT_MODEL, sample: cur }).sample, prompt: prompt(m.prompt)(cur) }));
    } else if (device === 'cpu' && archs.some((a) => a.arch === BUILTIN_MODELS[CPU_DEFAULT].arch)) {
      const shapes = BUILTIN_MODELS[CPU_DEFAULT];
      const a = archChoice(archs, shapes.arch)!;
      setModel((cur) => ({ ...cur, arch: a.value, name_or_path: CPU_DEFAULT }));
      setSample((cur) => ({ ...sampleDefaults(a, CPU_DEFAULT, cur), prompt: prompt(shapes.prompt)(cur) }));
    } else {
      const a = archChoice(archs, DEFAULT_MODEL.arch) ?? archChoice(archs, archs[0].arch)!;
      const path = `tiny:${a.arch}`;
      setModel((cur) => ({ ...cur, arch: a.value, name_or_path: path }));
      setSample((cur) => sampleDefaults(a, path, cur));
    }
    setReady(true);
  }, [archs, device, ready, settingsFor]);

  useEffect(() => {
    if (!ready) return;
    memory.current = remember(memory.current, model, sample);
    try {
      saveMemory(localStorage, memory.current);
    } catch {
      /* storage full or disabled: the form still works, it just is not remembered */
    }
  }, [ready, model, sample]);

  const changeArch = (name: string) => {
    const a = archChoice(archs, name);
    if (!a) return;
    const s = settingsFor(a, { model, sample });
    setModel(s.model);
    setSample(s.sample);
  };

  /**
   * A checkpoint picked from the model library (library.ts): the arch follows its family, then its defaults
   * apply (dtype for the engine's device, the size its config says it was trained at).
   */
  const pickModel = (p: ModelPick) => {
    const a = archChoice(archs, archForPick(p, archs, model.arch));
    if (!a) return;
    const base = a.value === model.arch ? { model, sample } : settingsFor(a, { model, sample });
    setModel({ ...base.model, arch: a.value, name_or_path: p.name_or_path, ...(p.dtype ? { dtype: p.dtype } : {}) });
    const sized = p.width && p.height && a.modality !== 'audio' ? { width: p.width, height: p.height } : {};
    setSample({ ...base.sample, ...sized });
  };

  /** Settings from a gallery entry or a dropped file, over that arch's current form. */
  const restore = (r: Restored): string | null => {
    const a = r.arch ? archChoice(archs, r.arch) : arch;
    if (!a) return r.arch ? `this engine has no ${r.arch} family` : 'no family to restore into';
    const base = a.value === model.arch ? { model, sample } : settingsFor(a, { model, sample });
    const controls = r.controls.slice(0, controlSlots(a)).map(controlFromPath);
    setModel({ ...base.model, ...(r.name_or_path ? { name_or_path: r.name_or_path } : {}), ...(r.loras ? { loras: r.loras } : {}) });
    const next = { ...base.sample, ...r.sample, ctrl_imgs: controls.length ? controls : base.sample.ctrl_imgs };
    if (r.sample.output_ext && !a.output_exts.includes(r.sample.output_ext)) next.output_ext = base.sample.output_ext;
    setSample(next);
    // the start image comes back where its file still is (a result deleted since, or another machine's path, not)
    const starts = [
      ['init_image', r.init_image, takesStartImage(a)],
      ['init_video', r.init_video, takesStartVideo(a)],
    ] as const;
    for (const [key, path, takes] of starts) {
      if (!path || !takes) continue;
      void apiFetch(`/api/files/${encodeURIComponent(path)}`, { method: 'HEAD' })
        .then((res) => res.ok && setSample((s) => ({ ...s, [key]: controlFromPath(path) })))
        .catch(() => undefined);
    }
    return null;
  };

  /** "Use as input" on a gallery result: its path is the start image (or video), the size its own. */
  const startFrom = (entry: OutputEntry) => {
    const { ref, width, height } = startFromEntry(entry);
    const div = arch?.divisibility ?? 8;
    const key = isVideoResult(entry) ? 'init_video' : 'init_image';
    if (!(key === 'init_video' ? takesStartVideo(arch) : takesStartImage(arch))) return;
    setSample((s) => ({ ...s, [key]: ref, ...(width && height ? { width: snap(width, div), height: snap(height, div) } : {}) }));
  };

  // the mask editor's pixels (StartImage -> MaskEditor), and the asset id of the last mask sent
  const mask = useRef<MaskHandle | null>(null);
  const sentMask = useRef<{ version: number; image: string; id: string } | null>(null);

  /**
   * The request, with the painted mask uploaded first (only when something is painted, once per change): the
   * engine reads it as a file, white repaints.
   */
  const requestBody = async (jobId: string | null) => {
    const b = body();
    if (!b || !arch) return b;
    const m = mask.current;
    const image = sample.init_image?.ref;
    if (!image || !takesStartImage(arch) || !canInpaint(arch) || !m?.painted()) return b;
    const cached = sentMask.current;
    let id = cached && cached.version === m.version() && cached.image === image ? cached.id : null;
    if (!id) {
      if (!jobId) throw new Error('Start an engine first: the mask is uploaded to it');
      const png = await m.png();
      id = (await uploadAsset(jobId, new Blob([png as BlobPart], { type: 'image/png' }), 'mask.png')).id;
      sentMask.current = { version: m.version(), image, id };
    }
    // the start fields again, now with the mask: its blur and "only masked" go only with a painted mask
    return { ...b, sample: { ...b.sample, ...startFields(arch, sample, id) } };
  };

  /** The request to send, with sizes snapped as the engine would (the form then shows what ran). */
  const body = () => {
    if (!arch) return null;
    const snapped = { ...sample, width: snap(sample.width, arch.divisibility), height: snap(sample.height, arch.divisibility) };
    setSample(snapped);
    return generateBody(arch, model, snapped, stream);
  };

  return { model, setModel, sample, setSample, stream, setStream, arch, changeArch, pickModel, restore, body, requestBody, startFrom, mask, ready };
}

export type GenerateFormState = ReturnType<typeof useGenerateForm>;
