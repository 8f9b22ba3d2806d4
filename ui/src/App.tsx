import { useCallback, useEffect, useState } from "react";
import { ApiError, del, get, setCsrf, setSignedOutHandler, type Session } from "./api";
import { Link, match, navigate, useLocation } from "./router";
import { SignIn, SignUp } from "./pages/Auth";
import { Credits } from "./pages/Credits";
import { Keys } from "./pages/Keys";
import { PipelineList } from "./pages/Pipelines";
import { Editor } from "./pages/Editor";
import { RunList, RunPage } from "./pages/Runs";
import { Media } from "./pages/Media";
import { EnclaveList, EnclavePage } from "./pages/Enclaves";
import { TaskList, TaskPage } from "./pages/Tasks";
import { ProxyList, RedactionLog } from "./pages/Redaction";

const nav: [string, string][] = [
  ["/pipelines", "Pipelines"],
  ["/runs", "Runs"],
  ["/billing", "Credits"],
  ["/keys", "API keys"],
  ["/media", "Media"],
  ["/enclaves", "Enclaves"],
  ["/tasks", "Tasks"],
  ["/proxies", "Proxies"],
  ["/redaction-log", "Redaction log"],
];

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const { path } = useLocation();

  const signedIn = useCallback((s: Session) => {
    setCsrf(s.csrfToken);
    setSession(s);
  }, []);

  useEffect(() => {
    setSignedOutHandler(() => setSession(null));
    get<Session>("/api/session").then(signedIn, (e) => {
      if (!(e instanceof ApiError) || e.status !== 401) console.error(e);
      setSession(null);
    });
  }, [signedIn]);

  if (session === undefined) {
    return (
      <main id="main" className="center">
        <p role="status">Loading…</p>
      </main>
    );
  }

  if (session === null) {
    const next = path === "/signin" || path === "/signup" ? "" : path;
    return (
      <>
        <header className="top">
          <span className="brand">Conduit</span>
        </header>
        <main id="main" className="center">
          {path === "/signup" ? (
            <SignUp />
          ) : (
            <SignIn next={next} onSignedIn={(s) => (signedIn(s), navigate(`/dashboard${next || "/pipelines"}`, true))} />
          )}
        </main>
      </>
    );
  }

  const signOut = async () => {
    try {
      await del("/api/session");
    } finally {
      setCsrf("");
      setSession(null);
      navigate("/dashboard/signin", true);
    }
  };

  let page;
  let m;
  if (path === "/" || path === "/signin" || path === "/signup") {
    navigate("/dashboard/pipelines", true);
    page = null;
  } else if (path === "/billing") page = <Credits />;
  else if (path === "/keys") page = <Keys />;
  else if (path === "/pipelines") page = <PipelineList />;
  else if ((m = match("/pipelines/:id", path))) page = <Editor key={m.id} id={m.id} />;
  else if (path === "/runs") page = <RunList />;
  else if ((m = match("/runs/:id", path))) page = <RunPage key={m.id} runId={m.id} />;
  else if (path === "/media") page = <Media />;
  else if (path === "/enclaves") page = <EnclaveList />;
  else if ((m = match("/enclaves/:id", path))) page = <EnclavePage id={m.id} />;
  else if (path === "/tasks") page = <TaskList />;
  else if ((m = match("/tasks/:id", path))) page = <TaskPage key={m.id} id={m.id} />;
  else if (path === "/proxies") page = <ProxyList />;
  else if (path === "/redaction-log") page = <RedactionLog />;
  else
    page = (
      <>
        <h1>Not found</h1>
        <p>
          No page at this address. <Link to="/pipelines">Go to pipelines</Link>.
        </p>
      </>
    );

  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Conduit</span>
        <nav aria-label="Main">
          <ul>
            {nav.map(([to, label]) => (
              <li key={to}>
                <Link to={to} aria-current={path === to || path.startsWith(to + "/") ? "page" : undefined}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span>{session.email}</span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}
