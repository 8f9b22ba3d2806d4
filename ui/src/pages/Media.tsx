import { useState } from "react";
import { usd, when } from "../api";
import { DataTable, Pager, SelectFilter, usePagedList } from "../list";
import { ErrorNote, Page } from "../ui";

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
  const list = usePagedList<{ items: Item[] }>("/api/media", { kind });
  return (
    <Page title="Media and purchases">
      <p>Files your runs made or you imported, with what each was charged. They are yours to download.</p>
      <SelectFilter
        label="Kind"
        name="kind"
        value={kind}
        onChange={setKind}
        anyLabel="all kinds"
        options={["video", "audio", "image"].map((k) => ({ value: k, label: k }))}
      />
      <ErrorNote error={list.error} />
      <DataTable
        caption="Media library, newest first"
        rows={list.data?.items}
        rowKey={(i) => i.id}
        empty="Nothing yet."
        columns={[
          { header: "Item", className: () => "mono", cell: (i) => <a href={i.url}>{i.id}</a> },
          {
            header: "Kind",
            cell: (i) => (
              <>
                {i.kind} <span className="muted">({i.contentType})</span>
              </>
            ),
          },
          { header: "Origin", cell: (i) => `${i.origin?.type ?? ""}${i.origin?.runId ? ` by run ${i.origin.runId}` : ""}` },
          { header: "Size", num: true, cell: (i) => `${(i.sizeBytes / 1024).toFixed(0)} KiB` },
          { header: "Price (USD)", num: true, cell: (i) => usd(i.priceUsd) },
          { header: "Created", cell: (i) => when(i.createdAt) },
        ]}
      />
      <Pager list={list} />
    </Page>
  );
}
