// Credentials on the /io gateway, as Cells reads them (first match wins): query `pydio_jwt`, header
// `X-Pydio-Bearer`, an AWS SigV4 `Authorization` header, a SigV4 presigned query. With SigV4 the access key IS the
// user's token (a JWT or a personal token `pat_…`) and the secret is the literal "gatewaysecret": the signature
// proves nothing about the user (the secret is public) but it proves the request was not altered in transit by
// someone without the token, and it must be checked so signed URLs expire. verifySigV4 recomputes the signature
// exactly per AWS SigV4 for S3 (no path normalisation, single URI-encoding of the path), checks the clock skew
// (15 min) and the presigned expiry (X-Amz-Expires ≤ 7 days), and compares in constant time.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { decodeQueryComponent, headerValue, splitUrl, STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, UNSIGNED_PAYLOAD, type Headers } from "./request";

export const GATEWAY_SECRET = "gatewaysecret";
export const ALGORITHM = "AWS4-HMAC-SHA256";
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
export const MAX_SKEW_SECONDS = 15 * 60;
export const MAX_PRESIGN_EXPIRES = 7 * 24 * 3600;

interface SigV4Common {
	/** The token (JWT or personal token). */
	accessKey: string;
	/** YYYYMMDD from the credential scope. */
	date: string;
	region: string;
	service: string;
	/** `<date>/<region>/<service>/aws4_request`. */
	scope: string;
	/** Lower-case header names, in the order given. */
	signedHeaders: string[];
	/** Lower-case hex. */
	signature: string;
}
export interface SigV4HeaderCredentials extends SigV4Common {
	kind: "sigv4-header";
}
export interface SigV4QueryCredentials extends SigV4Common {
	kind: "sigv4-query";
	/** X-Amz-Date (YYYYMMDDTHHMMSSZ). */
	amzDate: string;
	/** X-Amz-Expires, seconds. */
	expires: number;
}
export type SigV4Credentials = SigV4HeaderCredentials | SigV4QueryCredentials;
export type Credentials =
	| SigV4Credentials
	| { kind: "bearer"; token: string; source: "query" | "header" }
	/** Something that looks like credentials but cannot be used: answer with `code`. */
	| { kind: "invalid"; code: "AuthorizationHeaderMalformed" | "AuthorizationQueryParametersError" | "AccessDenied"; message: string }
	| { kind: "none" };

export type VerifyFailureCode = "SignatureDoesNotMatch" | "RequestTimeTooSkewed" | "AccessDenied" | "AuthorizationHeaderMalformed" | "AuthorizationQueryParametersError" | "InvalidRequest";

export interface VerifyOk {
	ok: true;
	/** Derived signing key: feed it to the aws-chunked decoder. */
	signingKey: Buffer;
	/** The request signature = seed signature of aws-chunked bodies. */
	seedSignature: string;
	/** YYYYMMDDTHHMMSSZ used in the string to sign. */
	amzDate: string;
	scope: string;
	/** The payload hash that was signed (x-amz-content-sha256 value, UNSIGNED-PAYLOAD, …). */
	payloadHash: string;
}
export type VerifyResult = VerifyOk | { ok: false; code: VerifyFailureCode; message: string };

export interface RequestParts {
	method: string;
	/** Request target as sent (path + query). */
	url: string;
	headers: Headers;
}

// ---------------------------------------------------------------------------------------------------------
// Primitives

export function sha256Hex(data: string | Buffer): string {
	return createHash("sha256").update(data).digest("hex");
}

function hmac(key: Buffer | string, data: string): Buffer {
	return createHmac("sha256", key).update(data, "utf8").digest();
}

/** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request"). */
export function deriveSigningKey(secret: string, date: string, region: string, service = "s3"): Buffer {
	return hmac(hmac(hmac(hmac("AWS4" + secret, date), region), service), "aws4_request");
}

/** HMAC-SHA256(signingKey, stringToSign) as lower-case hex. */
export function signString(signingKey: Buffer, stringToSign: string): string {
	return createHmac("sha256", signingKey).update(stringToSign, "utf8").digest("hex");
}

/** AWS URI encoding: everything but A-Z a-z 0-9 - . _ ~ is %XX (upper-case); '/' kept unless encodeSlash. */
export function uriEncode(s: string, encodeSlash = true): string {
	let out = "";
	for (const b of Buffer.from(s, "utf8")) {
		const c = String.fromCharCode(b);
		if ((b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || c === "-" || c === "." || c === "_" || c === "~") out += c;
		else if (c === "/" && !encodeSlash) out += c;
		else out += "%" + (b < 16 ? "0" : "") + b.toString(16).toUpperCase();
	}
	return out;
}

/**
 * Canonical URI candidates for S3: the path re-encoded segment by segment from its decoded form (what every SDK
 * signs), and the raw path as sent when it differs (clients that signed their own, looser encoding).
 */
export function canonicalUris(rawPath: string): string[] {
	const path = rawPath || "/";
	const normalized = path
		.split("/")
		.map((seg) => {
			try {
				return uriEncode(decodeURIComponent(seg), true);
			} catch {
				return seg;
			}
		})
		.join("/");
	return normalized === path ? [normalized] : [normalized, path];
}

/** Sorted, encoded `name=value&…`; `exclude` drops a parameter (X-Amz-Signature for presigned URLs). */
export function canonicalQueryString(rawQuery: string, exclude?: string): string {
	const pairs: Array<[string, string]> = [];
	for (const part of rawQuery.split("&")) {
		if (!part) continue;
		const eq = part.indexOf("=");
		const rn = eq >= 0 ? part.slice(0, eq) : part;
		const rv = eq >= 0 ? part.slice(eq + 1) : "";
		const dec = (s: string) => {
			try {
				return decodeQueryComponent(s);
			} catch {
				return s;
			}
		};
		const n = dec(rn);
		if (exclude !== undefined && n === exclude) continue;
		pairs.push([uriEncode(n), uriEncode(dec(rv))]);
	}
	pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
	return pairs.map(([n, v]) => `${n}=${v}`).join("&");
}

/** `name:value\n` for each signed header (values trimmed, inner whitespace runs collapsed). */
export function canonicalHeaders(headers: Headers, signed: string[]): string | undefined {
	let out = "";
	for (const name of signed) {
		const raw = headers[name] ?? headerValue(headers, name);
		if (raw === undefined) return undefined;
		const values = Array.isArray(raw) ? raw : [raw];
		out += `${name}:${values.map((v) => v.trim().replace(/\s+/g, " ")).join(",")}\n`;
	}
	return out;
}

export function canonicalRequest(method: string, canonicalUri: string, canonicalQuery: string, canonHeaders: string, signedHeaders: string[], payloadHash: string): string {
	return [method.toUpperCase(), canonicalUri, canonicalQuery, canonHeaders, signedHeaders.join(";"), payloadHash].join("\n");
}

export function stringToSign(amzDate: string, scope: string, canonicalRequestText: string): string {
	return [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequestText)].join("\n");
}

function safeEqualHex(a: string, b: string): boolean {
	const ba = Buffer.from(a, "utf8");
	const bb = Buffer.from(b, "utf8");
	if (ba.length !== bb.length) {
		timingSafeEqual(ba, ba);
		return false;
	}
	return timingSafeEqual(ba, bb);
}

const AMZ_DATE_RE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** YYYYMMDDTHHMMSSZ -> epoch ms (NaN if invalid). */
export function parseAmzDate(s: string): number {
	const m = AMZ_DATE_RE.exec(s);
	if (!m) return NaN;
	const [, y, mo, d, h, mi, se] = m.map(Number);
	const t = Date.UTC(y, mo - 1, d, h, mi, se);
	const back = new Date(t);
	if (back.getUTCDate() !== d || back.getUTCMonth() !== mo - 1) return NaN;
	return t;
}

export function formatAmzDate(d: Date): string {
	return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

// ---------------------------------------------------------------------------------------------------------
// Extraction

/** Splits `<accessKey>/<date>/<region>/<service>/aws4_request` from the right (the access key is a token). */
function parseCredential(v: string): { accessKey: string; date: string; region: string; service: string } | undefined {
	const parts = v.split("/");
	if (parts.length < 5) return undefined;
	const terminal = parts.pop()!;
	const service = parts.pop()!;
	const region = parts.pop()!;
	const date = parts.pop()!;
	const accessKey = parts.join("/");
	if (terminal !== "aws4_request" || !/^\d{8}$/.test(date) || !region || !service || !accessKey) return undefined;
	return { accessKey, date, region, service };
}

function parseSignedHeaders(v: string): string[] | undefined {
	const list = v.split(";").map((h) => h.trim().toLowerCase());
	if (list.length === 0 || list.some((h) => !/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(h))) return undefined;
	return list;
}

/**
 * Reads the credentials of an /io request (Cells' order: pydio_jwt query, X-Pydio-Bearer header, SigV4
 * Authorization header, SigV4 presigned query).
 */
export function extractCredentials(method: string, url: string, headers: Headers): Credentials {
	void method;
	const { query } = splitUrl(url);
	const q = new Map<string, string>();
	for (const part of query.split("&")) {
		if (!part) continue;
		const eq = part.indexOf("=");
		try {
			const n = decodeQueryComponent(eq >= 0 ? part.slice(0, eq) : part);
			if (!q.has(n)) q.set(n, decodeQueryComponent(eq >= 0 ? part.slice(eq + 1) : ""));
		} catch {
			/* a bad escape elsewhere is parseS3Request's business */
		}
	}
	const jwt = q.get("pydio_jwt");
	if (jwt) return { kind: "bearer", token: jwt, source: "query" };
	const bearer = headerValue(headers, "x-pydio-bearer")?.trim();
	if (bearer) return { kind: "bearer", token: bearer, source: "header" };

	const auth = headerValue(headers, "authorization")?.trim();
	if (auth) {
		if (!auth.startsWith(ALGORITHM + " ")) {
			if (/^bearer\s+/i.test(auth)) return { kind: "bearer", token: auth.replace(/^bearer\s+/i, "").trim(), source: "header" };
			return { kind: "invalid", code: "AccessDenied", message: "Unsupported authorization type (only AWS4-HMAC-SHA256 is accepted)" };
		}
		const fields = new Map<string, string>();
		for (const item of auth.slice(ALGORITHM.length + 1).split(",")) {
			const t = item.trim();
			if (!t) continue;
			const eq = t.indexOf("=");
			if (eq <= 0) return { kind: "invalid", code: "AuthorizationHeaderMalformed", message: "The authorization header is malformed" };
			fields.set(t.slice(0, eq).trim(), t.slice(eq + 1).trim());
		}
		const cred = parseCredential(fields.get("Credential") ?? "");
		const signed = parseSignedHeaders(fields.get("SignedHeaders") ?? "");
		const sig = fields.get("Signature") ?? "";
		if (!cred) return { kind: "invalid", code: "AuthorizationHeaderMalformed", message: "The authorization header is malformed; the Credential is mal-formed" };
		if (!signed) return { kind: "invalid", code: "AuthorizationHeaderMalformed", message: "The authorization header is malformed; SignedHeaders is invalid" };
		if (!/^[0-9a-fA-F]{64}$/.test(sig)) return { kind: "invalid", code: "AuthorizationHeaderMalformed", message: "The authorization header is malformed; the Signature is invalid" };
		return { kind: "sigv4-header", ...cred, scope: `${cred.date}/${cred.region}/${cred.service}/aws4_request`, signedHeaders: signed, signature: sig.toLowerCase() };
	}

	const algo = q.get("X-Amz-Algorithm");
	if (algo !== undefined || q.has("X-Amz-Signature") || q.has("X-Amz-Credential")) {
		const bad = (message: string): Credentials => ({ kind: "invalid", code: "AuthorizationQueryParametersError", message });
		if (algo !== ALGORITHM) return bad("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
		const cred = parseCredential(q.get("X-Amz-Credential") ?? "");
		if (!cred) return bad("Error parsing the X-Amz-Credential parameter");
		const amzDate = q.get("X-Amz-Date") ?? "";
		if (Number.isNaN(parseAmzDate(amzDate))) return bad("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
		const exp = q.get("X-Amz-Expires") ?? "";
		if (!/^\d{1,10}$/.test(exp)) return bad("X-Amz-Expires should be a number");
		const expires = Number(exp);
		if (expires < 1) return bad("X-Amz-Expires must be non-negative");
		if (expires > MAX_PRESIGN_EXPIRES) return bad("X-Amz-Expires must be less than a week (in seconds) that is 604800");
		const signed = parseSignedHeaders(q.get("X-Amz-SignedHeaders") ?? "");
		if (!signed) return bad("X-Amz-SignedHeaders is missing or invalid");
		const sig = q.get("X-Amz-Signature") ?? "";
		if (!/^[0-9a-fA-F]{64}$/.test(sig)) return bad("X-Amz-Signature is missing or invalid");
		return {
			kind: "sigv4-query",
			...cred,
			scope: `${cred.date}/${cred.region}/${cred.service}/aws4_request`,
			signedHeaders: signed,
			signature: sig.toLowerCase(),
			amzDate,
			expires,
		};
	}
	return { kind: "none" };
}

/** Removes `pydio_jwt` from a request target (Cells strips it before handling the request). */
export function stripPydioJwt(url: string): string {
	const { path, query } = splitUrl(url);
	const kept = query.split("&").filter((p) => p && !/^pydio_jwt(=|$)/.test(p));
	return kept.length ? `${path}?${kept.join("&")}` : path;
}

// ---------------------------------------------------------------------------------------------------------
// Verification

function requestDate(headers: Headers): string | undefined {
	const x = headerValue(headers, "x-amz-date")?.trim();
	if (x) return x;
	const d = headerValue(headers, "date");
	if (!d) return undefined;
	const t = Date.parse(d);
	return Number.isNaN(t) ? undefined : formatAmzDate(new Date(t));
}

function hasBody(headers: Headers): boolean {
	const cl = headerValue(headers, "content-length");
	return (cl !== undefined && cl.trim() !== "0") || headerValue(headers, "transfer-encoding") !== undefined;
}

/**
 * Verifies a SigV4 request (header or presigned) against `secret`. `now` (ms or Date) is for tests.
 * On success returns what an aws-chunked body needs to check its chunk signatures.
 */
export function verifySigV4(req: RequestParts, creds: SigV4Credentials, secret: string, opts: { now?: number | Date; maxSkewSeconds?: number } = {}): VerifyResult {
	const now = opts.now === undefined ? Date.now() : opts.now instanceof Date ? opts.now.getTime() : opts.now;
	const skew = (opts.maxSkewSeconds ?? MAX_SKEW_SECONDS) * 1000;
	const { path, query } = splitUrl(req.url);
	const presigned = creds.kind === "sigv4-query";
	const malformedCode = presigned ? "AuthorizationQueryParametersError" : "AuthorizationHeaderMalformed";

	if (creds.service !== "s3") return { ok: false, code: malformedCode, message: `The credential scope service must be 's3', not '${creds.service}'` };
	if (!creds.signedHeaders.includes("host")) return { ok: false, code: malformedCode, message: "The host header must be signed" };

	let amzDate: string;
	let payloadHash: string;
	if (presigned) {
		amzDate = creds.amzDate;
		const t = parseAmzDate(amzDate);
		if (t - skew > now) return { ok: false, code: "AccessDenied", message: "Request is not valid yet" };
		if (now > t + creds.expires * 1000) return { ok: false, code: "AccessDenied", message: "Request has expired" };
		const qsha = /(?:^|&)X-Amz-Content-Sha256=([^&]*)/.exec(query);
		payloadHash = qsha ? decodeQueryComponent(qsha[1]) : UNSIGNED_PAYLOAD;
	} else {
		const d = requestDate(req.headers);
		if (!d) return { ok: false, code: "AccessDenied", message: "AWS authentication requires a valid Date or x-amz-date header" };
		const t = parseAmzDate(d);
		if (Number.isNaN(t)) return { ok: false, code: "AccessDenied", message: "AWS authentication requires a valid Date or x-amz-date header" };
		if (Math.abs(now - t) > skew) return { ok: false, code: "RequestTimeTooSkewed", message: "The difference between the request time and the server's time is too large." };
		amzDate = d;
		const sha = headerValue(req.headers, "x-amz-content-sha256")?.trim();
		if (sha) payloadHash = sha;
		else if (!hasBody(req.headers)) payloadHash = EMPTY_SHA256;
		else return { ok: false, code: "InvalidRequest", message: "Missing required header for this request: x-amz-content-sha256" };
	}
	if (amzDate.slice(0, 8) !== creds.date)
		return { ok: false, code: malformedCode, message: `Invalid credential date "${creds.date}". This date is not the same as X-Amz-Date: "${amzDate.slice(0, 8)}".` };

	const canonHeaders = canonicalHeaders(req.headers, creds.signedHeaders);
	if (canonHeaders === undefined) return { ok: false, code: "SignatureDoesNotMatch", message: "A signed header is missing from the request" };
	const canonQuery = canonicalQueryString(query, presigned ? "X-Amz-Signature" : undefined);
	const signingKey = deriveSigningKey(secret, creds.date, creds.region, creds.service);
	let match = false;
	for (const uri of canonicalUris(path)) {
		const cr = canonicalRequest(req.method, uri, canonQuery, canonHeaders, creds.signedHeaders, payloadHash);
		const expected = signString(signingKey, stringToSign(amzDate, creds.scope, cr));
		// No early exit: every candidate is computed and compared.
		if (safeEqualHex(expected, creds.signature)) match = true;
	}
	if (!match) return { ok: false, code: "SignatureDoesNotMatch", message: "The request signature we calculated does not match the signature you provided. Check your key and signing method." };
	return { ok: true, signingKey, seedSignature: creds.signature, amzDate, scope: creds.scope, payloadHash };
}

/** True when the signed payload is aws-chunked with chunk signatures (the decoder must verify them). */
export function isSignedStreaming(payloadHash: string): boolean {
	return payloadHash === STREAMING_SIGNED || payloadHash === STREAMING_SIGNED_TRAILER;
}

// ---------------------------------------------------------------------------------------------------------
// Signing (presigned URLs; also used by tests)

export interface PresignOptions {
	method: string;
	/** Path (already URI-encoded as it will be sent) + optional query. */
	url: string;
	/** Host header value the client will send (host[:port]). */
	host: string;
	accessKey: string;
	secret?: string;
	region?: string;
	/** Seconds, 1..604800. */
	expires: number;
	/** Signing time (default now). */
	date?: Date;
}

/** Returns `url` with the X-Amz-* presign parameters appended (signed headers: host). */
export function presignUrl(o: PresignOptions): string {
	if (!Number.isInteger(o.expires) || o.expires < 1 || o.expires > MAX_PRESIGN_EXPIRES) throw new RangeError("expires must be 1..604800 seconds");
	const secret = o.secret ?? GATEWAY_SECRET;
	const region = o.region ?? "us-east-1";
	const amzDate = formatAmzDate(o.date ?? new Date());
	const date = amzDate.slice(0, 8);
	const scope = `${date}/${region}/s3/aws4_request`;
	const { path, query } = splitUrl(o.url);
	const add = [
		`X-Amz-Algorithm=${ALGORITHM}`,
		`X-Amz-Credential=${uriEncode(`${o.accessKey}/${scope}`)}`,
		`X-Amz-Date=${amzDate}`,
		`X-Amz-Expires=${o.expires}`,
		`X-Amz-SignedHeaders=host`,
	].join("&");
	const fullQuery = query ? `${query}&${add}` : add;
	const cr = canonicalRequest(o.method, canonicalUris(path)[0], canonicalQueryString(fullQuery), `host:${o.host.trim()}\n`, ["host"], UNSIGNED_PAYLOAD);
	const sig = signString(deriveSigningKey(secret, date, region, "s3"), stringToSign(amzDate, scope, cr));
	return `${path}?${fullQuery}&X-Amz-Signature=${sig}`;
}
