// An SMTP server in the test process (smtp-server) that keeps what it receives, parsed with mailparser: what a
// node sends through SMTP_URL=relay.url. It can refuse for a while (451) or reject some recipients (550).
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { simpleParser, type ParsedMail } from "mailparser";

export interface Received {
	envelopeTo: string[];
	mail: ParsedMail;
}

/** An SMTP server on a free port that keeps what it receives; `refuse` makes it answer 451 (try later). */
export class Relay {
	received: Received[] = [];
	refuse = false;
	/** Milliseconds the server takes before answering a message's data with 451 (a relay that hangs); 0: it accepts. */
	hangMs = 0;
	/** Recipients it always rejects (550). */
	bounce = new Set<string>();
	private server?: SMTPServer;
	private make(): SMTPServer {
		return new SMTPServer({
		authOptional: true,
		disabledCommands: ["STARTTLS"],
		logger: false,
		onMailFrom: (_address, _session, cb) => (this.refuse ? cb(Object.assign(new Error("Greylisted, try again later"), { responseCode: 451 })) : cb()),
		onRcptTo: (address, _session, cb) => (this.bounce.has(address.address) ? cb(Object.assign(new Error("No such mailbox"), { responseCode: 550 })) : cb()),
		onData: (stream, session, cb) => {
			if (this.hangMs) {
				stream.resume();
				stream.on("end", () => setTimeout(() => cb(Object.assign(new Error("Timed out, try again"), { responseCode: 451 })), this.hangMs));
				return;
			}
			simpleParser(stream).then(
				(mail) => {
					this.received.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), mail });
					cb();
				},
				(err: Error) => cb(err),
			);
		},
		});
	}
	port = 0;

	/** A new server each time: a closed one keeps refusing. */
	async start(port = 0): Promise<void> {
		const server = (this.server = this.make());
		await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
		this.port = (server.server.address() as AddressInfo).port;
	}
	stop(): Promise<void> {
		const server = this.server;
		this.server = undefined;
		return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
	}
	get url(): string {
		return `smtp://127.0.0.1:${this.port}`;
	}
	/** The first mail received for `address` whose subject matches. */
	find(address: string, subject: RegExp): Received | undefined {
		return this.received.find((r) => r.envelopeTo.includes(address) && subject.test(r.mail.subject ?? ""));
	}
}

