import { useState } from "react";
import { get, qs, usd, when } from "../api";
import { ErrorNote, Page, useLoad } from "../ui";

type Item = {
  id: string;
  kind: string;
  contentType: string;
  sizeBytes: number;
  durationSeconds?: number;
  url: string;
  origin: { type: string; runId?: string; operation?: string };
  priceUsd: number;
  createdAt: string;
};

// Media is what the account owns: its library of generated, imported,
// assembled and edited files (docs/media.md), each with what it cost.
export function Media() {
  const [kind, setKind] = useState("");
  const [pages, setPages] = useState<string[]>([""]);
  const after = pages[pages.length - 1];
  const list = useLoad(() => get<{ items: Item[]; nextAfter?: string }>("/api/media" + qs({ kind, limit: 25, after })), [kind, after]);
  return (
    <Page title="Media and purchases">
      <p>Files your runs made or you imported, with what each was charged. They are yours to download.</p>
      <label>
        Kind
        <select
          value={kind}
          onChange={(e) => {
            setKind(e.target.value);
            setPages([""]);
          }}
        >
          <option value="">all kinds</option>
          <option value="video">video</option>
          <option value="audio">audio</option>
          <option value="image">image</option>
        </select>
      </label>
      <ErrorNote error={list.error} />
      <table>
        <caption className="sr-only">Media library, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Item</th>
            <th scope="col">Kind</th>
            <th scope="col">Origin</th>
            <th scope="col" className="num">
              Size
            </th>
            <th scope="col" className="num">
              Price (USD)
            </th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.items.map((i) => (
            <tr key={i.id}>
              <td className="mono">
                <a href={i.url}>{i.id}</a>
              </td>
              <td>
                {i.kind} <span className="muted">({i.contentType})</span>
              </td>
              <td>
                {i.origin?.type}
                {i.origin?.runId ? ` by run ${i.origin.runId}` : ""}
              </td>
              <td className="num">{(i.sizeBytes / 1024).toFixed(0)} KiB</td>
              <td className="num">{usd(i.priceUsd)}</td>
              <td>{when(i.createdAt)}</td>
            </tr>
          ))}
          {list.data && list.data.items.length === 0 && (
            <tr>
              <td colSpan={6}>Nothing yet.</td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="pager">
        <button type="button" disabled={pages.length < 2} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!list.data?.nextAfter} onClick={() => setPages([...pages, list.data!.nextAfter!])}>
          Older
        </button>
      </div>
    </Page>
  );
}
