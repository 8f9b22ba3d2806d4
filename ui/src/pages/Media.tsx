import { useState } from "react";
import { usd, when } from "../api";
import { Pager, SelectFilter, usePagedList } from "../list";
import { ErrorNote, Page } from "../ui";
import { MediaView, mediaKindOf } from "../editor/media";
import "../editor/editor.css";

type Item = {
  id: string;
  kind: string;
  contentType: string;
  sizeBytes: number;
  durationSeconds?: number;
  url: string;
  origin: { type: string; runId?: string; pipelineId?: string; nodeId?: string; operation?: string; jobId?: string; url?: string };
  priceUsd: number;
  createdAt: string;
};

const origins = ["generated", "imported", "assembled", "edited"];

// Media is what the account owns: its library of generated, imported,
// assembled and edited files (docs/media.md), each playable where it is
// listed, with what it cost and the run or job that made it.
export function Media() {
  const [kind, setKind] = useState("");
  const [origin, setOrigin] = useState("");
  // The API filters by kind and origin, so every page holds only matches.
  const list = usePagedList<{ items: Item[] }>("/api/media", { kind, origin });
  const items = list.data?.items;
  return (
    <Page title="Media and purchases">
      <p>Files your runs made or you imported, with what each was charged. They are yours to play and download.</p>
      <div className="filters">
        <SelectFilter
          label="Kind"
          name="kind"
          value={kind}
          onChange={setKind}
          anyLabel="all kinds"
          options={["video", "audio", "image"].map((k) => ({ value: k, label: k }))}
        />
        <SelectFilter label="Origin" name="origin" value={origin} onChange={setOrigin} anyLabel="any origin" options={origins.map((o) => ({ value: o, label: o }))} />
      </div>
      <ErrorNote error={list.error} />
      {items && items.length === 0 && <p>{kind || origin ? "Nothing matches these filters." : "Nothing yet."}</p>}
      <ul className="media-grid" aria-label="Media library, newest first">
        {items?.map((i) => {
          const k = mediaKindOf(i.url, i.contentType);
          return (
            <li key={i.id} data-item={i.id} data-kind={i.kind}>
              <h3 className="mono">{i.id}</h3>
              {k ? (
                <MediaView
                  url={i.url}
                  kind={k}
                  label={`${i.kind} ${i.id}`}
                  runId={i.origin?.runId}
                  jobUrl={i.origin?.jobId ? `/api/media/jobs/${encodeURIComponent(i.origin.jobId)}` : undefined}
                />
              ) : (
                <a href={i.url}>Open the file</a>
              )}
              <dl>
                <dt>Kind</dt>
                <dd>
                  {i.kind} <span className="muted">({i.contentType})</span>
                </dd>
                <dt>Origin</dt>
                <dd>
                  {i.origin?.type}
                  {i.origin?.operation ? ` (${i.origin.operation})` : ""}
                  {i.origin?.nodeId ? ` by node ${i.origin.nodeId}` : ""}
                </dd>
                {i.durationSeconds !== undefined && (
                  <>
                    <dt>Length</dt>
                    <dd>{i.durationSeconds.toFixed(1)} s</dd>
                  </>
                )}
                <dt>Size</dt>
                <dd>{(i.sizeBytes / 1024).toFixed(0)} KiB</dd>
                <dt>Price</dt>
                <dd>{usd(i.priceUsd)} USD</dd>
                <dt>Created</dt>
                <dd>{when(i.createdAt)}</dd>
              </dl>
            </li>
          );
        })}
      </ul>
      <Pager list={list} />
    </Page>
  );
}
