import { ApiError, get, when, type Enclave } from "../api";
import { DataTable } from "../list";
import { Link } from "../router";
import { ErrorNote, Page, Status, useLoad } from "../ui";

function Unavailable({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 503) return <p>Enclaves are not enabled on this deployment.</p>;
  return <ErrorNote error={error} />;
}

export function EnclaveList() {
  const list = useLoad(() => get<{ enclaves: Enclave[] }>("/api/enclaves"), []);
  return (
    <Page title="Enclaves">
      <p>Your enclaves (read-only here; manage them through the API or the tool server).</p>
      {list.error ? <Unavailable error={list.error} /> : null}
      <DataTable
        caption="Your enclaves"
        rows={list.data?.enclaves}
        rowKey={(e) => e.id}
        empty="No enclaves."
        columns={[
          { header: "Name", cell: (e) => <Link to={`/enclaves/${encodeURIComponent(e.id)}`}>{e.name}</Link> },
          { header: "Status", cell: (e) => <Status status={e.status} /> },
          { header: "Region", cell: (e) => e.region },
          { header: "Endpoint", className: () => "mono", cell: (e) => e.endpoint ?? "–" },
          { header: "Created", cell: (e) => when(e.createdAt) },
        ]}
      />
    </Page>
  );
}

export function EnclavePage({ id }: { id: string }) {
  const e = useLoad(() => get<Enclave>(`/api/enclaves/${encodeURIComponent(id)}`), [id]);
  const d = e.data;
  return (
    <Page title={d ? `Enclave: ${d.name}` : "Enclave"}>
      {e.error ? <Unavailable error={e.error} /> : null}
      {d && (
        <dl className="facts">
          <dt>Id</dt>
          <dd className="mono">{d.id}</dd>
          <dt>Status</dt>
          <dd>
            <Status status={d.status} />
          </dd>
          <dt>Description</dt>
          <dd>{d.description || "–"}</dd>
          <dt>Region</dt>
          <dd>{d.region}</dd>
          <dt>Source</dt>
          <dd>{d.sourceType}</dd>
          <dt>Endpoint</dt>
          <dd className="mono">{d.endpoint ?? "–"}</dd>
          {d.error_message && (
            <>
              <dt>Error</dt>
              <dd className="error">{d.error_message}</dd>
            </>
          )}
          <dt>Measurements (PCRs)</dt>
          <dd className="mono small">
            {d.pcrs
              ? Object.entries(d.pcrs).map(([k, v]) => (
                  <div key={k}>
                    {k}: {v}
                  </div>
                ))
              : "–"}
          </dd>
          <dt>Created</dt>
          <dd>{when(d.createdAt)}</dd>
          <dt>Updated</dt>
          <dd>{when(d.updatedAt)}</dd>
        </dl>
      )}
    </Page>
  );
}
