import { useEffect, useRef, useState, type ReactNode } from "react";
import { ApiError } from "./api";

// Page is a page's heading and body; the heading takes focus when the page
// opens, so screen-reader and keyboard users start at the top of the new page.
export function Page({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  const h = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Conduit`;
    h.current?.focus();
  }, [title]);
  return (
    <>
      <div className="page-head">
        <h1 tabIndex={-1} ref={h}>
          {title}
        </h1>
        {actions}
      </div>
      {children}
    </>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const msg = error instanceof Error ? error.message : String(error);
  const problems = error instanceof ApiError && Array.isArray(error.body?.problems) ? error.body.problems : [];
  return (
    <div role="alert" className="error">
      {msg}
      {problems.length > 0 && (
        <ul>
          {problems.map((p: any, i: number) => (
            <li key={i}>
              {p.node ? `${p.node}${p.field ? "." + p.field : ""}: ` : ""}
              {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

// useLoad runs a loader and keeps its result, error and a reload function.
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{status}</span>;
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          // Clipboard access can be refused (insecure origin); select
          // the text instead so it can be copied by hand.
          const el = document.createElement("textarea");
          el.value = text;
          document.body.appendChild(el);
          el.select();
          document.execCommand("copy");
          el.remove();
        }
        setDone(true);
        setTimeout(() => setDone(false), 2000);
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

export function Live({ children }: { children: ReactNode }) {
  return (
    <p role="status" aria-live="polite" className="live">
      {children}
    </p>
  );
}
