'use client';
/**
 * The hidden file input behind a "choose a file" label (start image, start video, reference images): a pick of
 * the same file again is a new pick, so the value is cleared as it is read.
 */
interface Props {
  id: string;
  accept: string;
  disabled: boolean;
  onFile: (file: File) => void;
}

export default function FilePick({ id, accept, disabled, onFile }: Props) {
  return (
    <input
      id={id}
      type="file"
      accept={accept}
      className="sr-only"
      disabled={disabled}
      onChange={(e) => {
        const file = e.target.files?.[0];
        e.target.value = '';
        if (file) onFile(file);
      }}
      data-testid={id}
    />
  );
}
