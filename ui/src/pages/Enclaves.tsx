import { ApiError, get, when } from "../api";
import { Link } from "../router";
import { ErrorNote, Page, Status, useLoad } from "../ui";

type Enclave = {
  id: string;
  name: string;
  description?: string;
  region?: string;
  status: string;
  endpoint?: string | null;
  sourceType?: string;
  pcrs?: Record<string, string>;
  error_message?: string | null;
  createdAt: string;
  updatedAt: string;
};

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
      <table>
        <caption className="sr-only">Your enclaves</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Region</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.enclaves.map((e) => (
            <tr key={e.id}>
              <td>
                <Link to={`/enclaves/${encodeURIComponent(e.id)}`}>{e.name}</Link>
              </td>
              <td>
                <Status status={e.status} />
              </td>
              <td>{e.region}</td>
              <td className="mono">{e.endpoint ?? "–"}</td>
              <td>{when(e.createdAt)}</td>
            </tr>
          ))}
          {list.data && list.data.enclaves.length === 0 && (
            <tr>
              <td colSpan={5}>No enclaves.</td>
            </tr>
          )}
        </tbody>
      </table>
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
