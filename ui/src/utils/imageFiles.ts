/** The first image file among pasted, dropped or picked items (a text or a non-image file is passed over). */
export function imageOf(list: DataTransferItemList | FileList | null | undefined): File | null {
  const items: (File | DataTransferItem)[] = list ? Array.from(list as ArrayLike<File | DataTransferItem>) : [];
  for (const item of items) {
    const file = item instanceof File ? item : item.kind === 'file' ? item.getAsFile() : null;
    if (file && file.type.startsWith('image/')) return file;
  }
  return null;
}
