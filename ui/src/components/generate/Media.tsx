/** An output file in the right player: image, video (mp4/webm) or audio; animated webp is an image. */
const VIDEO = new Set(['mp4', 'webm', 'mov', 'mkv', 'm4v']);
const AUDIO = new Set(['mp3', 'wav', 'flac', 'ogg']);

export function mediaKind(name: string): 'image' | 'video' | 'audio' {
  const ext = name.split('.').pop()?.toLowerCase() ?? '';
  return VIDEO.has(ext) ? 'video' : AUDIO.has(ext) ? 'audio' : 'image';
}

export default function Media({ url, name, className = '' }: { url: string; name: string; className?: string }) {
  const kind = mediaKind(name);
  // `#t=0.001`: with preload="metadata" Chrome would show an empty box; a start time makes it fetch and show
  // the first frame, without downloading whole videos for a gallery
  if (kind === 'video')
    return <video src={`${url}#t=0.001`} className={className} controls loop muted playsInline preload="metadata" data-testid="media-video" />;
  if (kind === 'audio') return <audio src={url} className="w-full" controls preload="metadata" data-testid="media-audio" />;
  return <img src={url} alt={name} className={`${className} [image-rendering:pixelated]`} data-testid="media-image" />;
}
