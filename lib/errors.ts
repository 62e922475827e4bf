// The one error module. Every error a client may see is one of these classes: a fixed HTTP status and a
// stable `type` that the gateway writes as Cells' `restError.Code` (a string: the official Go client breaks
// on a number). Anything else that reaches the gateway is a 500 without internals.
import { Errors } from "moleculer";

export class CellarError extends Errors.MoleculerClientError {
	constructor(message: string, code: number, type: string, data?: unknown) {
		super(message, code, type, data);
		this.name = this.constructor.name;
	}
}

export class BadRequestError extends CellarError {
	constructor(message: string, data?: unknown) {
		super(message, 400, "bad.request", data);
	}
}
export class UnauthorizedError extends CellarError {
	constructor(message = "Unauthorized", type = "unauthorized") {
		super(message, 401, type);
	}
}
export class ForbiddenError extends CellarError {
	constructor(message = "You are not allowed to do this", type = "forbidden") {
		super(message, 403, type);
	}
}
export class NotFoundError extends CellarError {
	constructor(message: string, type = "not.found") {
		super(message, 404, type);
	}
}
export class ConflictError extends CellarError {
	constructor(message: string, type = "conflict") {
		super(message, 409, type);
	}
}
export class PayloadTooLargeError extends CellarError {
	constructor(message: string) {
		super(message, 413, "payload.too.large");
	}
}
export class LockedError extends CellarError {
	constructor(message = "This resource is currently locked, please retry later!") {
		super(message, 423, "locked");
	}
}
export class TooManyRequestsError extends CellarError {
	/** `retryAfter` (seconds) becomes the Retry-After header of the answer. */
	constructor(message: string, retryAfter?: number) {
		super(message, 429, "too.many.requests", retryAfter === undefined ? undefined : { retryAfter });
	}
}
/** Not "RequestTimeoutError": that name is Moleculer's (a call between services that timed out, a 503). */
export class BodyTimeoutError extends CellarError {
	constructor(message: string) {
		super(message, 408, "request.timeout");
	}
}
export class NotSupportedError extends CellarError {
	constructor(message: string) {
		super(message, 501, "not.supported");
	}
}

const STATUS_TITLES: Record<number, string> = {
	400: "Bad Request",
	401: "Unauthorized",
	403: "Forbidden",
	404: "Not Found",
	408: "Request Timeout",
	409: "Conflict",
	413: "Payload Too Large",
	423: "Locked",
	429: "Too Many Requests",
	500: "Internal Server Error",
	501: "Not Implemented",
	503: "Service Unavailable",
};

export interface RestErrorBody {
	Code: string;
	Title: string;
	Detail: string;
}

/** Maps anything thrown on the way to an HTTP status and Cells' `restError` body. */
export function toRestError(err: unknown): { status: number; body: RestErrorBody } {
	const e = err as { code?: unknown; type?: unknown; message?: unknown; name?: unknown; data?: unknown } | undefined;
	let status = typeof e?.code === "number" ? e.code : 500;
	let type = typeof e?.type === "string" ? e.type : "internal";
	let message = typeof e?.message === "string" ? e.message : "Internal error";
	const name = typeof e?.name === "string" ? e.name : "";
	if (name === "ValidationError" || type === "VALIDATION_ERROR") {
		status = 400;
		type = "validation";
		message = describeValidation(e?.data) || message;
	} else if (name === "ServiceNotFoundError" || name === "ServiceNotAvailableError" || name === "RequestTimeoutError" || name === "RequestRejectedError" || name === "BrokerDisconnectedError") {
		// No node could do it, or the one doing it died (RequestRejectedError): its node's name is not the client's business.
		status = 503;
		type = "service.unavailable";
		message = "Service temporarily unavailable";
	} else if (name === "PayloadTooLarge" || (name === "PayloadTooLargeError" && status === 413)) {
		status = 413;
		type = "payload.too.large";
	} else if (name === "UnAuthorizedError") {
		status = 401;
		type = "unauthorized";
	}
	if (status < 400 || status > 599) status = 500;
	// A 500 never carries internals: the log has them.
	if (status === 500 && !(err instanceof CellarError)) message = "Internal error";
	return { status, body: { Code: type, Title: message, Detail: `${STATUS_TITLES[status] ?? "Error"}: ${message}` } };
}

function describeValidation(data: unknown): string {
	if (!Array.isArray(data)) return "";
	return data
		.map((d: { message?: string; field?: string; type?: string }) => {
			if (d.type === "objectStrict") return `Unknown field(s) in request: ${(d as { actual?: string }).actual ?? d.field ?? ""}`.trim();
			return d.message ?? `${d.field}: ${d.type}`;
		})
		.join("; ");
}
export class ServiceUnavailableError extends CellarError {
	constructor(message = "Service temporarily unavailable") {
		super(message, 503, "service.unavailable");
	}
}
/**
 * Work this node sheds on purpose (a full queue): a 503, with Retry-After from the gateway. The service is not
 * failing, so the circuit breaker does not count it (moleculer.config): a burst of refusals must not cut off the
 * requests the service can still answer.
 */
export class BusyError extends CellarError {
	constructor(message: string) {
		super(message, 503, BUSY);
	}
}
export const BUSY = "busy";
