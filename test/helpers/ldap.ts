// An LDAP directory in the test process (ldapjs): a service account that may bind and search, and a few users
// under ou=people,dc=example,dc=org who may bind with their own passwords; their groups under
// ou=groups,dc=example,dc=org (groupOfNames, `member` listing user DNs), named on each user by `memberOf`.
import ldap from "ldapjs";
import type { DirectoryStore } from "../../lib/directories/admin";
import type { DirectoryConfig } from "../../lib/directories/model";

// The parts of ldapjs' handler arguments used here (its typings leave them untyped).
type Next = (err?: unknown) => void;
interface Request {
	dn: { toString(): string };
	credentials?: string;
	filter: { matches(attributes: Record<string, unknown>, strictAttrCase: boolean): boolean };
	connection: { ldap: { bindDN: { toString(): string } } };
}
interface Reply {
	send(entry: { dn: string; attributes: Record<string, unknown> }): void;
	end(): void;
}

export const BASE = "ou=people,dc=example,dc=org";
export const BIND_DN = "cn=admin,dc=example,dc=org";
export const BIND_PW = "Bind-Secret-1";
export const GROUPS = "ou=groups,dc=example,dc=org";

export interface LdapUser {
	uid: string;
	password: string;
	cn?: string;
	mail?: string;
	/** The cn of the groups it is a member of. */
	groups?: string[];
	employeeType?: string;
}

export interface TestDirectory {
	/** host:port, as a directory's Host. */
	host: string;
	users: LdapUser[];
	/** Searches the server answered (binds excluded). */
	searches: number;
	stop(): Promise<void>;
}

const dnOf = (uid: string) => `uid=${uid},${BASE}`;
const groupDn = (cn: string) => `cn=${cn},${GROUPS}`;

export async function startDirectory(users: LdapUser[]): Promise<TestDirectory> {
	const server = ldap.createServer();
	const state: TestDirectory = { host: "", users, searches: 0, stop: () => new Promise<void>((res) => server.close(() => res())) };
	const entries = () =>
		state.users.map((u) => ({
			dn: dnOf(u.uid),
			attributes: {
				objectclass: ["inetOrgPerson", "person"],
				uid: u.uid,
				cn: u.cn ?? u.uid,
				...(u.mail ? { mail: u.mail } : {}),
				...(u.employeeType ? { employeetype: u.employeeType } : {}),
				...(u.groups?.length ? { memberof: u.groups.map(groupDn) } : {}),
				userpassword: "{SSHA}hidden",
			},
		}));
	const groups = () => {
		const names = [...new Set(state.users.flatMap((u) => u.groups ?? []))];
		return names.map((cn) => ({ dn: groupDn(cn), attributes: { objectclass: ["groupOfNames"], cn, member: state.users.filter((u) => u.groups?.includes(cn)).map((u) => dnOf(u.uid)) } }));
	};
	server.bind("dc=example,dc=org", (req: Request, res: Reply, next: Next) => {
		const dn = req.dn.toString().replace(/\s+/g, "");
		const password = req.credentials;
		const ok = dn === BIND_DN ? password === BIND_PW : state.users.some((u) => dnOf(u.uid) === dn && u.password === password);
		if (!ok) return next(new ldap.InvalidCredentialsError());
		res.end();
		return next();
	});
	const searchOf = (list: () => { dn: string; attributes: Record<string, unknown> }[]) => (req: Request, res: Reply, next: Next) => {
		// Only the service account may search (an anonymous connection may not).
		const bound = req.connection.ldap.bindDN.toString().replace(/\s+/g, "");
		if (bound !== BIND_DN) return next(new ldap.InsufficientAccessRightsError());
		state.searches++;
		for (const e of list()) if (req.filter.matches(e.attributes, false)) res.send(e);
		res.end();
		return next();
	};
	server.search(BASE, searchOf(entries));
	server.search(GROUPS, searchOf(groups));
	await new Promise<void>((res) => server.listen(0, "127.0.0.1", () => res()));
	state.host = new URL(server.url).host;
	return state;
}

/** Directory configurations kept in memory, by ConfigId (what lib/db/directories keeps in SQL). */
export class MemDirectoryStore implements DirectoryStore {
	readonly rows = new Map<string, DirectoryConfig>();
	async all() {
		return [...this.rows.values()].sort((a, b) => (a.ConfigId ?? "").localeCompare(b.ConfigId ?? ""));
	}
	async get(id: string) {
		return structuredClone(this.rows.get(id) ?? null);
	}
	async put(c: DirectoryConfig & { ConfigId: string }) {
		this.rows.set(c.ConfigId, structuredClone(c));
	}
	async delete(id: string) {
		return this.rows.delete(id);
	}
}
