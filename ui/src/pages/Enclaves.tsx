import { useEffect, useState, type FormEvent } from "react";
import { ApiError, del, get, post, qs, when, type Enclave } from "../api";
import { DataTable } from "../list";
import { Link, navigate } from "../router";
import { ConfirmButton, ErrorNote, Live, Page, Status, useLoad } from "../ui";

// The enclave pages (docs/enclaves.md): a list with a create form, and a
// detail page with the record, its last failure and Retry, the actions
// the state allows (each asking first), logs by type, and a freshly
// verified attestation.

function Unavailable({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 503) return <p>Enclaves are not enabled on this deployment.</p>;
  return <ErrorNote error={error} />;
}

// Steps under way: the page refreshes itself while the enclave is in one.
const moving = new Set(["PENDING_BUILD", "BUILDING", "PENDING_DEPLOY", "DEPLOYING", "PAUSING", "RESUMING", "PENDING_DESTROY", "DESTROYING"]);

// useEvery calls f every ms while on is true (the page's own refresh; it
// stops when the page closes or the condition ends).
function useEvery(on: boolean, ms: number, f: () => void) {
  useEffect(() => {
    if (!on) return;
    const t = window.setInterval(f, ms);
    return () => window.clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [on, ms]);
}

type Source = "registry" | "private-registry" | "github";

function CreateEnclave({ onCreated }: { onCreated: (e: Enclave) => void }) {
  const [f, setF] = useState({
    name: "",
    description: "",
    source: "registry" as Source,
    image: "",
    cpu: "1",
    memory: "256",
    username: "",
    password: "",
    repo: "",
    branch: "main",
    ghUser: "",
    token: "",
  });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    const providerConfig: Record<string, unknown> = { cpuCount: Number(f.cpu), memoryMiB: Number(f.memory) };
    const body: Record<string, unknown> = { name: f.name, description: f.description, sourceType: f.source, providerConfig };
    if (f.source === "github") {
      body.githubConnection = { selectedRepo: f.repo, selectedBranch: f.branch, username: f.ghUser || undefined, token: f.token || undefined };
    } else {
      providerConfig.dockerImage = f.image;
    }
    if (f.source === "private-registry") {
      body.registryUsername = f.username;
      body.registryPassword = f.password;
    }
    try {
      onCreated(await post<Enclave>("/api/enclaves", body));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="new-enclave-h">
      <h2 id="new-enclave-h">Create an enclave</h2>
      <form onSubmit={submit}>
        <div className="form-grid">
          <label>
            Name
            <input name="enclaveName" required maxLength={100} value={f.name} onChange={set("name")} />
          </label>
          <label>
            Description
            <input name="enclaveDescription" maxLength={1000} value={f.description} onChange={set("description")} />
          </label>
          <label>
            Source
            <select name="sourceType" value={f.source} onChange={set("source")}>
              <option value="registry">a public registry image</option>
              <option value="private-registry">a private registry image</option>
              <option value="github">built from a GitHub repository</option>
            </select>
          </label>
          {f.source !== "github" && (
            <label className="wide">
              Image <span className="hint">an OCI reference, e.g. registry.example.com/team/app:v1 or …@sha256:…</span>
              <input name="dockerImage" required value={f.image} onChange={set("image")} className="mono" />
            </label>
          )}
          {f.source === "private-registry" && (
            <>
              <label>
                Registry username
                <input name="registryUsername" required autoComplete="off" value={f.username} onChange={set("username")} />
              </label>
              <label>
                Registry password <span className="hint">sealed at rest, never shown again</span>
                <input name="registryPassword" type="password" required autoComplete="new-password" value={f.password} onChange={set("password")} />
              </label>
            </>
          )}
          {f.source === "github" && (
            <>
              <label>
                Repository <span className="hint">owner/name</span>
                <input name="selectedRepo" required pattern="[^/\s]+/[^/\s]+" value={f.repo} onChange={set("repo")} />
              </label>
              <label>
                Branch
                <input name="selectedBranch" value={f.branch} onChange={set("branch")} />
              </label>
              <label>
                GitHub username <span className="hint">optional</span>
                <input name="githubUsername" autoComplete="off" value={f.ghUser} onChange={set("ghUser")} />
              </label>
              <label>
                Access token <span className="hint">for a private repository; never shown again</span>
                <input name="githubToken" type="password" autoComplete="off" value={f.token} onChange={set("token")} />
              </label>
            </>
          )}
          <label>
            CPUs <span className="hint">1–16</span>
            <input name="cpuCount" type="number" min={1} max={16} required value={f.cpu} onChange={set("cpu")} />
          </label>
          <label>
            Memory (MiB) <span className="hint">16–65536</span>
            <input name="memoryMiB" type="number" min={16} max={65536} required value={f.memory} onChange={set("memory")} />
          </label>
        </div>
        <ErrorNote error={error} />
        <button type="submit" className="primary" disabled={busy}>
          Create enclave
        </button>
      </form>
    </section>
  );
}

export function EnclaveList() {
  const list = useLoad(() => get<{ enclaves: Enclave[] }>("/api/enclaves"), []);
  const [creating, setCreating] = useState(false);
  useEvery(!!list.data?.enclaves.some((e) => moving.has(e.status)), 3000, list.reload);
  return (
    <Page
      title="Enclaves"
      actions={
        <button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>
          {creating ? "Close the form" : "New enclave"}
        </button>
      }
    >
      {creating && <CreateEnclave onCreated={(e) => navigate(`/dashboard/enclaves/${encodeURIComponent(e.id)}`)} />}
      {list.error ? <Unavailable error={list.error} /> : null}
      <DataTable
        caption="Your enclaves"
        rows={list.data?.enclaves}
        rowKey={(e) => e.id}
        empty="No enclaves yet."
        columns={[
          { header: "Name", cell: (e) => <Link to={`/enclaves/${encodeURIComponent(e.id)}`}>{e.name}</Link> },
          { header: "Status", cell: (e) => <Status status={e.status} /> },
          { header: "Source", cell: (e) => e.sourceType },
          { header: "Endpoint", className: () => "mono", cell: (e) => e.endpoint ?? "–" },
          { header: "Created", cell: (e) => when(e.createdAt) },
        ]}
      />
    </Page>
  );
}

const logTypes = ["all", "application", "ecs", "stepfunctions", "build", "errors", "lambda"];
type LogEntry = { timestamp: string; message: string; source?: string; stream?: string; type: string };

function Logs({ id, live }: { id: string; live: boolean }) {
  const [type, setType] = useState("all");
  const [limit, setLimit] = useState(100);
  const [follow, setFollow] = useState(false);
  const logs = useLoad(() => get<{ logs: LogEntry[] }>(`/api/enclaves/${encodeURIComponent(id)}/logs${qs({ logType: type, limit })}`), [id, type, limit]);
  useEvery(follow, 2000, logs.reload);
  const entries = logs.data?.logs ?? [];
  return (
    <section className="card" aria-labelledby="logs-h">
      <h2 id="logs-h">Logs</h2>
      <div className="toolbar-row">
        <label>
          Type
          <select name="logType" value={type} onChange={(e) => setType(e.target.value)}>
            {logTypes.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Newest
          <select name="logLimit" value={limit} onChange={(e) => setLimit(Number(e.target.value))}>
            {[50, 100, 500, 1000].map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label className="inline">
          <input type="checkbox" name="follow" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
          Follow{live ? "" : " (the enclave is not running)"}
        </label>
        <button type="button" onClick={logs.reload}>
          Refresh logs
        </button>
      </div>
      <ErrorNote error={logs.error} />
      <div className="logbox" data-testid="enclave-logs" tabIndex={0} role="log" aria-label={`Enclave logs, ${type}`}>
        {entries.length === 0
          ? logs.loading
            ? "Loading…"
            : "No log entries of this type."
          : entries.map((l, i) => (
              <div key={i}>
                <span className="log-time">{new Date(l.timestamp).toLocaleTimeString()}</span> <span className="log-type">[{l.type}]</span> {l.message}
              </div>
            ))}
      </div>
    </section>
  );
}

type Check = { name: string; ok: boolean; detail?: string };
type Attestation = {
  enclaveId: string;
  status: string;
  attestationDocument: { timestamp: string; digest: string; moduleId: string; pcrs: Record<string, string | null>; nonce?: string };
  verification: { trustLevel: string; verificationStatus: string; integrityScore: number; checks: Check[]; nonce: string; nonceSource: string; verifiedAt: string };
  signingKeys?: { evmAddress?: string; solanaPublicKey?: string } | null;
  endpoints?: { verificationUrl?: string; apiEndpoint?: string | null };
};

function AttestationView({ id, deployed }: { id: string; deployed: boolean }) {
  const [nonce, setNonce] = useState("");
  const [att, setAtt] = useState<Attestation | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const fetchIt = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const base = `/api/enclaves/${encodeURIComponent(id)}/attestation`;
      setAtt(await get<Attestation>(nonce ? `${base}/verify${qs({ nonce })}` : base));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const v = att?.verification;
  return (
    <section className="card" aria-labelledby="att-h">
      <h2 id="att-h">Attestation</h2>
      <p className="hint">A fresh document from the enclave, verified in full against the measured PCRs (docs/attestation.md).</p>
      <form className="toolbar-row" onSubmit={fetchIt}>
        <label>
          Nonce <span className="hint">optional, hex or base64</span>
          <input name="nonce" value={nonce} onChange={(e) => setNonce(e.target.value)} className="mono" />
        </label>
        <button type="submit" className="primary" disabled={busy || !deployed}>
          {nonce ? "Verify with this nonce" : "Fetch and verify"}
        </button>
        {!deployed && <span className="hint">Only a deployed enclave attests.</span>}
      </form>
      <ErrorNote error={error} />
      {att && v && (
        <div data-testid="attestation">
          <dl className="facts">
            <dt>Verdict</dt>
            <dd>
              <Status status={v.verificationStatus} /> trust level <strong>{v.trustLevel}</strong>, integrity {v.integrityScore}/100
            </dd>
            <dt>Checks</dt>
            <dd>
              <ul className="checks">
                {v.checks.map((c) => (
                  <li key={c.name}>
                    <span className={c.ok ? "pass" : "fail"}>{c.ok ? "✓ passed" : "✗ failed"}</span> <strong>{c.name}</strong>
                    {c.detail ? <span className="muted"> — {c.detail}</span> : null}
                  </li>
                ))}
              </ul>
            </dd>
            <dt>Nonce</dt>
            <dd className="mono">
              {v.nonce} ({v.nonceSource})
            </dd>
            <dt>Document time</dt>
            <dd>{when(att.attestationDocument.timestamp)}</dd>
            <dt>Document PCRs</dt>
            <dd className="mono small">
              {Object.entries(att.attestationDocument.pcrs).map(([k, val]) => (
                <div key={k}>
                  PCR{k}: {val ?? "–"}
                </div>
              ))}
            </dd>
            {att.signingKeys && (
              <>
                <dt>Bound signing keys</dt>
                <dd className="mono small">
                  EVM {att.signingKeys.evmAddress ?? "–"}
                  <br />
                  Solana {att.signingKeys.solanaPublicKey ?? "–"}
                </dd>
              </>
            )}
            <dt>Verified at</dt>
            <dd>{when(v.verifiedAt)}</dd>
          </dl>
        </div>
      )}
    </section>
  );
}

type FullEnclave = Enclave & {
  providerId?: string;
  providerConfig?: { dockerImage?: string; cpuCount?: number; memoryMiB?: number };
  walletAddress?: string | null;
  lastFailure?: { message: string; attempt: number; at: string } | null;
  registryUsername?: string;
  githubConnection?: { isConnected: boolean; username?: string; selectedRepo: string; selectedBranch: string };
};

export function EnclavePage({ id }: { id: string }) {
  const path = `/api/enclaves/${encodeURIComponent(id)}`;
  const e = useLoad(() => get<FullEnclave>(path), [id]);
  const d = e.data;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState("");
  useEvery(!!d && moving.has(d.status), 2000, e.reload);

  const act = async (what: string, f: () => Promise<unknown>, message: string) => {
    setBusy(true);
    setError(null);
    setDone(`${what}…`);
    try {
      await f();
      setDone(message);
      e.reload();
    } catch (err) {
      setError(err);
      setDone("");
    } finally {
      setBusy(false);
    }
  };
  const image = d?.providerConfig?.dockerImage ?? "";
  // The digest deployed: the reference's when pinned, else the one the
  // deployment recorded in its provisioning log ("running <ref>
  // (sha256:…) at …").
  const ran = d?.status === "DEPLOYED" || d?.status === "PAUSED";
  const ecs = useLoad(
    () => (ran ? get<{ logs: LogEntry[] }>(`${path}/logs${qs({ logType: "ecs", limit: 1000 })}`) : Promise.resolve({ logs: [] as LogEntry[] })),
    [id, ran],
  );
  const deployedDigest =
    ecs.data?.logs
      .map((l) => /^running \S+ \((sha256:[0-9a-f]{64})\)/.exec(l.message)?.[1])
      .filter(Boolean)
      .pop() ?? "";
  const digest = image.includes("@sha256:") ? image.slice(image.indexOf("@") + 1) : deployedDigest;

  return (
    <Page title={d ? `Enclave: ${d.name}` : "Enclave"}>
      {e.error ? <Unavailable error={e.error} /> : null}
      {d && (
        <>
          <div className="actions" role="group" aria-label="Enclave actions">
            {d.status === "DEPLOYED" && (
              <ConfirmButton
                label="Pause"
                question="Pause the enclave? Its application stops answering until it is resumed."
                confirmLabel="Yes, pause"
                disabled={busy}
                onConfirm={() => act("Pausing", () => post(`${path}/pause`), "The enclave is paused.")}
              />
            )}
            {d.status === "PAUSED" && (
              <ConfirmButton
                label="Resume"
                question="Resume the enclave?"
                confirmLabel="Yes, resume"
                disabled={busy}
                onConfirm={() => act("Resuming", () => post(`${path}/resume`), "The enclave is running again.")}
              />
            )}
            {!["DESTROYED", "FAILED", "PAUSING", "RESUMING", "PENDING_DESTROY", "DESTROYING"].includes(d.status) && (
              <ConfirmButton
                label="Terminate"
                danger
                question="Terminate the enclave for good? Its instance and keys are destroyed."
                confirmLabel="Yes, terminate"
                disabled={busy}
                onConfirm={() => act("Terminating", () => post(`${path}/terminate`), "The enclave is destroyed.")}
              />
            )}
            {(d.status === "DESTROYED" || d.status === "FAILED") && (
              <ConfirmButton
                label="Delete"
                danger
                question="Delete this enclave's record and logs?"
                confirmLabel="Yes, delete"
                disabled={busy}
                onConfirm={() => act("Deleting", () => del(path).then(() => navigate("/dashboard/enclaves")), "Deleted.")}
              />
            )}
            <button type="button" onClick={e.reload}>
              Refresh
            </button>
          </div>
          <ErrorNote error={error} />
          <Live>{done}</Live>
          {d.lastFailure && (
            <div className="note" role="alert" data-testid="last-failure">
              <p>
                <strong>
                  {d.status === "BUILDING" ? "The build" : "The deployment"} is being retried: attempt {d.lastFailure.attempt} failed{" "}
                  {when(d.lastFailure.at)}.
                </strong>
              </p>
              <p className="mono">{d.lastFailure.message}</p>
              <p>
                It is retried with backoff on its own; once the cause is fixed, retry now.{" "}
                <button
                  type="button"
                  className="primary"
                  disabled={busy}
                  onClick={() => act("Retrying", () => post(`${path}/retry`), "Retried now: the step runs again.")}
                >
                  Retry now
                </button>
              </p>
            </div>
          )}
          <dl className="facts">
            <dt>Id</dt>
            <dd className="mono">{d.id}</dd>
            <dt>Status</dt>
            <dd>
              <Status status={d.status} />
              {moving.has(d.status) && <span className="hint"> (refreshing while this step runs)</span>}
            </dd>
            {d.error_message && (
              <>
                <dt>Error</dt>
                <dd className="error">{d.error_message}</dd>
              </>
            )}
            <dt>Description</dt>
            <dd>{d.description || "–"}</dd>
            <dt>Provider</dt>
            <dd>
              {d.providerId ?? "–"} ({d.region})
            </dd>
            <dt>Source</dt>
            <dd>
              {d.sourceType}
              {d.githubConnection && (
                <>
                  {" "}
                  <span className="mono">
                    {d.githubConnection.selectedRepo}@{d.githubConnection.selectedBranch}
                  </span>
                </>
              )}
              {d.registryUsername && <> as {d.registryUsername}</>}
            </dd>
            <dt>Image</dt>
            <dd className="mono">{image || "– (not built yet)"}</dd>
            <dt>Image digest</dt>
            <dd className="mono" data-testid="digest">
              {digest || "– (known once deployed)"}
            </dd>
            <dt>Resources</dt>
            <dd>
              {d.providerConfig?.cpuCount ?? "–"} CPU, {d.providerConfig?.memoryMiB ?? "–"} MiB
            </dd>
            <dt>Wallet address</dt>
            <dd className="mono" data-testid="wallet">
              {d.walletAddress ?? "– (assigned when it deploys)"}
            </dd>
            <dt>Endpoint</dt>
            <dd className="mono">{d.endpoint ?? "–"}</dd>
            <dt>Measurements (PCRs)</dt>
            <dd className="mono small">
              {d.pcrs && Object.keys(d.pcrs).length > 0
                ? Object.entries(d.pcrs).map(([k, v]) => (
                    <div key={k}>
                      PCR{k}: {v}
                    </div>
                  ))
                : "–"}
            </dd>
            <dt>Created</dt>
            <dd>{when(d.createdAt)}</dd>
            <dt>Updated</dt>
            <dd>{when(d.updatedAt)}</dd>
          </dl>
          <p>
            <Link to={`/tasks?enclaveId=${encodeURIComponent(d.id)}`}>Scheduled tasks on this enclave</Link>
          </p>
          <Logs id={d.id} live={d.status === "DEPLOYED"} />
          <AttestationView id={d.id} deployed={d.status === "DEPLOYED"} />
        </>
      )}
    </Page>
  );
}
