// The console's calls to the objectlog HTTP API (same origin), and the byte encodings the API
// uses (keys, values and header values are base64).
import { bearerToken, forgetToken, signIn, signInRequired } from "./auth.js";

/** Headers that authenticate the console's requests: none locally (the dev stack has no
 * login); on AWS the user's bearer token from the OIDC issuer (auth.js). The one place every
 * request takes them from. */
export function authHeaders() {
  const token = bearerToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** An answer of the API that is not a success: its status and the message its body gave. */
export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/** Call the API: JSON in, JSON out; a non-2xx answer throws ApiError with the API's message. */
export async function api(method, path, body) {
  const headers = { Accept: "application/json", ...authHeaders() };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, `${method} ${path}: the API did not answer (${error.message})`, null);
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (response.status === 401 && signInRequired()) {
    forgetToken(); // expired or revoked: sign in again, then come back here
    await signIn(window.location.pathname + window.location.search);
  }
  if (!response.ok) {
    const message = (parsed && (parsed.message || parsed.error)) || text || response.statusText;
    throw new ApiError(response.status, `${method} ${path}: ${response.status} ${message}`, parsed);
  }
  return parsed;
}

/** A path with its segments URL-encoded: path`/topics/${name}`. */
export function path(strings, ...values) {
  return strings.reduce(
    (out, part, i) => out + part + (i < values.length ? encodeURIComponent(values[i]) : ""),
    "",
  );
}

/** A query string from an object, leaving out null and undefined values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export function base64ToBytes(text) {
  if (text === null || text === undefined) return null;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function textToBase64(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
