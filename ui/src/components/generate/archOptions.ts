/**
 * The Architecture select: families grouped as AI Toolkit's UI groups them (image, instruction, video, audio,
 * experimental), each followed by its `arch:tag` variants (`zimage:turbo`), and what choosing one does to the
 * Model field. The engine resolves a tag the same way (toolkit/models/arch_tags.py); the request's model.arch
 * carries it.
 */
import type { ArchGroup, ArchInfo } from '@/utils/types';

export const ARCH_GROUPS: ArchGroup[] = ['image', 'instruction', 'video', 'audio', 'experimental'];

/** A family or one of its tags, as the form uses it: the family's facts with the entry's defaults and hub id. */
export interface ArchChoice extends ArchInfo {
  /** what the select holds and the request sends: `zimage` or `zimage:turbo` */
  value: string;
  tag: string | null;
  hub_id: string;
}

export interface ArchOption {
  value: string;
  label: string;
}

/** `zimage:turbo` -> `zimage`: the family, which names tiny checkpoints, LoRA families and resident models. */
export function familyOf(arch: string): string {
  return arch.split(':')[0];
}

/** The family's group; an engine that sends none: its modality's. */
export function groupOf(info: Pick<ArchInfo, 'group' | 'modality'>): ArchGroup {
  return info.group && ARCH_GROUPS.includes(info.group) ? info.group : info.modality;
}

/** The entry `value` names, or undefined when this engine has no such family or tag. */
export function archChoice(archs: ArchInfo[], value: string): ArchChoice | undefined {
  const family = familyOf(value);
  const tag = value.slice(family.length + 1);
  const info = archs.find((a) => a.arch === family);
  if (!info) return undefined;
  if (!tag) return { ...info, value: family, tag: null, hub_id: info.hub_id ?? '' };
  const t = info.tags?.[tag];
  if (!t) return undefined;
  return {
    ...info,
    value: `${family}:${tag}`,
    tag,
    // the engine sends each tag's whole defaults (the family's updated by the tag's)
    defaults: { ...info.defaults, ...t.defaults },
    hub_id: t.hub_id || info.hub_id || '',
    description: t.description || info.description,
  };
}

function familyLabel(a: ArchInfo): string {
  return `${a.arch} — ${a.modality}${a.description ? ` · ${a.description}` : ''}`;
}

/** The select's optgroups in AI Toolkit's group order; families by name, each followed by its tags. */
export function archOptionGroups(archs: ArchInfo[]): { group: ArchGroup; options: ArchOption[] }[] {
  return ARCH_GROUPS.map((group) => {
    const families = archs.filter((a) => groupOf(a) === group).sort((a, b) => a.arch.localeCompare(b.arch));
    const options = families.flatMap((a) => [
      { value: a.arch, label: familyLabel(a) },
      ...Object.entries(a.tags ?? {}).map(([tag, t]) => ({
        value: `${a.arch}:${tag}`,
        label: `\u00a0\u00a0${a.arch}:${tag}${t.description ? ` · ${t.description}` : ''}`,
      })),
    ]);
    return { group, options };
  }).filter((g) => g.options.length > 0);
}

/**
 * The Model field after switching from `prev` to `next`. An empty field, or one still holding the previous
 * entry's hub id, takes the new entry's hub id (else the family's tiny checkpoint); a `tiny:` or `builtin:`
 * checkpoint of another family becomes the new family's tiny one; anything else is a path the user typed and
 * stays.
 */
export function nextModelPath(prev: Pick<ArchChoice, 'arch' | 'hub_id'> | undefined, path: string, next: Pick<ArchChoice, 'arch' | 'hub_id'>,
  builtinArch: (path: string) => string | undefined = () => undefined): string {
  const tiny = `tiny:${next.arch}`;
  if (!path || (prev?.hub_id && path === prev.hub_id)) return next.hub_id || tiny;
  if (path.startsWith('tiny:')) return path.slice(5).split(/[/:]/)[0] === next.arch ? path : tiny; // tiny:zimage/b too
  if (path.startsWith('builtin:')) return builtinArch(path) === next.arch ? path : tiny;
  return path;
}
