// Inline players for the platform's media files: audio, video and images
// play where people look at them (Try it, the run page, the library).
import { Link } from "../router";

export type MediaKind = "audio" | "video" | "image";

// mediaKindOf says what a file is from its content type, its URL's
// extension, or the node kind that made it.
export function mediaKindOf(url: string, contentType?: string, nodeType?: string): MediaKind | null {
  if (contentType?.startsWith("audio/")) return "audio";
  if (contentType?.startsWith("video/")) return "video";
  if (contentType?.startsWith("image/")) return "image";
  let path = url;
  try {
    path = new URL(url, location.href).pathname;
  } catch {
    return null;
  }
  const ext = path.slice(path.lastIndexOf(".") + 1).toLowerCase();
  if (["mp3", "wav", "ogg", "m4a", "aac", "flac", "opus"].includes(ext)) return "audio";
  if (["mp4", "webm", "mov", "m4v"].includes(ext)) return "video";
  if (["png", "jpg", "jpeg", "webp", "gif"].includes(ext)) return "image";
  if (nodeType === "speech" || nodeType === "music") return "audio";
  if (nodeType === "video") return "video";
  return null;
}

export const isURL = (v: string) => /^https?:\/\/\S+$/.test(v);

// MediaView plays a file inline, with a link to it and, when known, to the
// run or job that made it.
export function MediaView({
  url,
  kind,
  label,
  testId,
  runId,
  jobUrl,
}: {
  url: string;
  kind: MediaKind;
  label: string;
  testId?: string;
  runId?: string;
  jobUrl?: string;
}) {
  return (
    <div className="media-view" data-testid={testId} data-kind={kind}>
      {kind === "audio" && <audio controls preload="metadata" src={url} aria-label={label} />}
      {kind === "video" && <video controls preload="metadata" playsInline src={url} aria-label={label} />}
      {kind === "image" && <img src={url} alt={label} />}
      <span className="file">
        <a href={url} target="_blank" rel="noreferrer">
          Open the file
        </a>
        {runId && (
          <>
            {" · made by run "}
            <Link to={`/runs/${encodeURIComponent(runId)}`}>{runId}</Link>
          </>
        )}
        {jobUrl && (
          <>
            {" · made by "}
            <a href={jobUrl} target="_blank" rel="noreferrer">
              its job
            </a>
          </>
        )}
      </span>
    </div>
  );
}
