import { useState, type FormEvent } from "react";
import { post, type Session } from "../api";
import { Link } from "../router";
import { ErrorNote, Page } from "../ui";

function AuthForm({ kind, onSignedIn }: { kind: "signin" | "signup"; onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await post<Session>(kind === "signin" ? "/api/session" : "/api/signup", { email, password });
      onSignedIn(s);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} className="card narrow" aria-describedby="auth-error">
      <label>
        Email
        <input type="email" name="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      </label>
      <label>
        Password
        <input
          type="password"
          name="password"
          autoComplete={kind === "signin" ? "current-password" : "new-password"}
          required
          minLength={kind === "signup" ? 8 : undefined}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
      </label>
      <div id="auth-error">
        <ErrorNote error={error} />
      </div>
      <button type="submit" className="primary" disabled={busy}>
        {kind === "signin" ? "Sign in" : "Create account"}
      </button>
    </form>
  );
}

export function SignIn({ next, onSignedIn }: { next: string; onSignedIn: (s: Session) => void }) {
  return (
    <Page title="Sign in">
      {next === "/billing" && <p>Sign in to buy credit.</p>}
      <AuthForm kind="signin" onSignedIn={onSignedIn} />
      <p>
        New here? <Link to="/signup">Create an account</Link> (5.00 USD of free credit).
      </p>
    </Page>
  );
}

export function SignUp({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  return (
    <Page title="Create an account">
      <AuthForm kind="signup" onSignedIn={onSignedIn} />
      <p>
        Have an account? <Link to="/signin">Sign in</Link>.
      </p>
    </Page>
  );
}
