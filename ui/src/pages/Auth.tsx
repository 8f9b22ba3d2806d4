import { useState, type FormEvent } from "react";
import { post, type Session } from "../api";
import { Link } from "../router";
import { ErrorNote, Page } from "../ui";

// The server's shortest and longest password (internal/humans.MinPassword
// and MaxPassword; frontend/pages/limits_test.go checks they agree).
const minPassword = 12;
const maxPassword = 256;

// What POST /api/signup answers: the same for a new and a registered email,
// so the form can only say "check your email".
type SignUpAnswer = { status: string; email: string; message: string };

function AuthForm({
  kind,
  onSignedIn,
  onSignedUp,
}: {
  kind: "signin" | "signup";
  onSignedIn?: (s: Session) => void;
  onSignedUp?: (a: SignUpAnswer) => void;
}) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      if (kind === "signin") {
        onSignedIn?.(await post<Session>("/api/session", { email, password }));
      } else {
        onSignedUp?.(await post<SignUpAnswer>("/api/signup", { email, password }));
      }
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
          minLength={kind === "signup" ? minPassword : undefined}
          maxLength={maxPassword}
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
        New here? <Link to="/signup">Create an account</Link> (5.00 USD of free credit once you confirm your email).
      </p>
    </Page>
  );
}

export function SignUp() {
  const [sent, setSent] = useState<SignUpAnswer | null>(null);
  if (sent) {
    return (
      <Page title="Check your email">
        <div className="card narrow" role="status">
          <p>{sent.message}</p>
          <p>Open the link in that message to confirm your address; your 5.00 USD of free credit is added then.</p>
        </div>
        <p>
          Confirmed? <Link to="/signin">Sign in</Link>.
        </p>
      </Page>
    );
  }
  return (
    <Page title="Create an account">
      <AuthForm kind="signup" onSignedUp={setSent} />
      <p>
        A password is at least {minPassword} characters. Have an account? <Link to="/signin">Sign in</Link>.
      </p>
    </Page>
  );
}
