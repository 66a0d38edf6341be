// Who the console's user is. Locally (objectlog dev) nobody signs in: /console/config.json says
// {"auth": "none"}. On AWS the API takes bearer tokens of the JWT issuer only (a browser cannot
// sign SigV4), so the page signs its user in there: OAuth 2.0's authorization code flow with
// PKCE (RFC 7636, S256) for a public client, the one request the console sends elsewhere. The
// token is kept in sessionStorage (this tab, until it expires or the API refuses it) and sent
// with every API call (api.js), which the ACLs then authorize as that user.

const TOKEN_KEY = "objectlog.console.token";
const PENDING_KEY = "objectlog.console.signIn";
export const CALLBACK_PATH = "/console/callback";

let settings = { auth: "none" };

/** Read the console's settings from the API that served the page. */
export async function loadSettings() {
  const response = await fetch("/console/config.json", { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`/console/config.json: ${response.status} ${response.statusText}`);
  settings = await response.json();
  return settings;
}

export function signInRequired() {
  return settings.auth === "oidc";
}

/** The bearer token to send, or null (none needed, none yet, or expired). */
export function bearerToken() {
  if (!signInRequired()) return null;
  const kept = JSON.parse(window.sessionStorage.getItem(TOKEN_KEY) || "null");
  if (!kept || Date.now() >= kept.expiresAt) return null;
  return kept.token;
}

export function forgetToken() {
  window.sessionStorage.removeItem(TOKEN_KEY);
}

/** Leave for the issuer's sign-in page; the callback brings the user back to returnTo. */
export async function signIn(returnTo) {
  const endpoints = await issuerEndpoints();
  const verifier = randomText(48);
  const state = randomText(24);
  const pending = { verifier, state, returnTo };
  window.sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(endpoints.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: settings.client_id,
    redirect_uri: callbackUrl(),
    scope: settings.scopes.join(" "),
    code_challenge: await s256(verifier),
    code_challenge_method: "S256",
    state,
  }).toString();
  window.location.assign(url.toString());
}

/** At /console/callback: trade the issuer's code for a token; answers where to go next. */
export async function completeSignIn(search) {
  const answer = new URLSearchParams(search);
  const pending = JSON.parse(window.sessionStorage.getItem(PENDING_KEY) || "null");
  window.sessionStorage.removeItem(PENDING_KEY);
  if (answer.get("error")) {
    const why = answer.get("error_description") || "";
    throw new Error(`The sign-in was refused: ${answer.get("error")} ${why}`.trim());
  }
  if (!pending || !answer.get("state") || answer.get("state") !== pending.state) {
    throw new Error("This sign-in answer is not for a request this page made (state differs).");
  }
  const endpoints = await issuerEndpoints();
  const response = await fetch(endpoints.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: answer.get("code") || "",
      redirect_uri: callbackUrl(),
      client_id: settings.client_id,
      code_verifier: pending.verifier,
    }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok || !body.access_token) {
    const why = body.error_description || body.error || response.statusText;
    throw new Error(`The issuer did not give a token: ${response.status} ${why}`);
  }
  const lifetimeMs = Number(body.expires_in || 300) * 1000;
  const kept = { token: body.access_token, expiresAt: Date.now() + lifetimeMs - 10_000 };
  window.sessionStorage.setItem(TOKEN_KEY, JSON.stringify(kept));
  return pending.returnTo && pending.returnTo.startsWith("/console") ? pending.returnTo : "/console";
}

function callbackUrl() {
  return `${window.location.origin}${CALLBACK_PATH}`;
}

/** The issuer's endpoints: as configured, else from its OpenID discovery document. */
async function issuerEndpoints() {
  if (settings.authorization_endpoint && settings.token_endpoint) return settings;
  const issuer = settings.issuer.replace(/\/$/, "");
  const response = await fetch(`${issuer}/.well-known/openid-configuration`);
  if (!response.ok) throw new Error(`The issuer's discovery document: ${response.status}`);
  const found = await response.json();
  return {
    authorization_endpoint: settings.authorization_endpoint || found.authorization_endpoint,
    token_endpoint: settings.token_endpoint || found.token_endpoint,
  };
}

function randomText(bytes) {
  return base64Url(window.crypto.getRandomValues(new Uint8Array(bytes)));
}

async function s256(text) {
  const digest = await window.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return base64Url(new Uint8Array(digest));
}

function base64Url(bytes) {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
