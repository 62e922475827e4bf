// The tables as Kysely sees them: one interface per table, column names as they are in SQL (snake_case), so a
// query reads the same in TypeScript as in `psql` or `sqlite3`. The migrations in ./migrations create exactly
// these; a change here without a new migration is a type lie, and the behaviour suites catch it on both backends.
//
// Conventions shared by both dialects, so that a row reads back the same whichever backend holds it:
// - ids are text (uuids, or names for named things); times are integers (unix seconds, or ms where named so);
// - flags are 0/1 integers (better-sqlite3 cannot bind booleans, and pg would hand back real booleans);
// - structured values (attributes, policies, meta...) are JSON text, parsed by the repositories: nothing queries
//   inside them, and text comes back identical from both drivers where jsonb would not.

/** A 0/1 integer column. */
export type Flag = 0 | 1;

export interface UsersTable {
	uuid: string;
	/** Null for groups. */
	login: string | null;
	group_path: string;
	is_group: Flag;
	/** Null for users. */
	group_label: string | null;
	/** JSON object of strings. */
	attributes: string;
	password_hash: string | null;
	/** JSON array of role uuids given explicitly. */
	roles: string;
	/** JSON array of resource policies. */
	policies: string;
	last_connected: number | null;
	created_at: number | null;
	/** JSON of lib/auth/login-guard's LoginGuard; null when the account has none. */
	login_guard: string | null;
}

export interface RolesTable {
	uuid: string;
	label: string;
	is_team: Flag;
	group_role: Flag;
	user_role: Flag;
	/** JSON array of profiles. */
	auto_applies: string;
	force_override: Flag;
	policies: string;
	policies_context_editable: Flag;
	last_updated: number;
}

export interface WorkspacesTable {
	uuid: string;
	slug: string;
	label: string;
	description: string;
	scope: string;
	last_updated: number;
	policies: string;
	policies_context_editable: Flag;
	/** JSON object text, as Cells carries it. */
	attributes: string;
}

export interface AclsTable {
	id: string;
	/** Empty strings, never null: the unique key (role, workspace, node, action) must compare them. */
	role_id: string;
	workspace_id: string;
	node_id: string;
	action_name: string;
	action_value: string;
	/** Microseconds at creation, for a stable listing order. */
	created: number;
}

export interface PolicyGroupsTable {
	uuid: string;
	name: string;
	description: string;
	owner_uuid: string | null;
	resource_group: string;
	last_updated: number;
	/** JSON array of policies. */
	policies: string;
}

export interface IpListsTable {
	name: string;
	/** JSON array of addresses and networks. */
	ips: string;
}

export interface IpStatesTable {
	ip: string;
	/** Unix seconds, 0 when never banned. */
	ban_expire: number;
	/** JSON array of failure times (ms). */
	failures: string;
	/** JSON array of the last attempts. */
	history: string;
}

export interface SessionsTable {
	id: string;
	user_uuid: string;
	login: string;
	ip: string | null;
	user_agent: string | null;
	refresh_hash: string;
	/** JSON array of rotated-away hashes. */
	used_hashes: string;
	refresh_expires_at: number;
	created_at: number;
	updated_at: number;
}

export interface TokensTable {
	id: string;
	token_hash: string;
	kind: string;
	type: string;
	label: string;
	user_uuid: string;
	user_login: string;
	scopes: string;
	auto_refresh_window: number;
	expires_at: number;
	max_expires_at: number | null;
	created_at: number;
	created_by: string;
	updated_at: number;
	impersonated_by: string | null;
}

export interface ResetKeysTable {
	id: string;
	key_hash: string;
	user_uuid: string;
	login: string;
	email: string;
	expires_at: number;
	created_at: number;
	seq: number | null;
}

export interface SelectionsTable {
	uuid: string;
	owner: string;
	paths: string;
	action: string | null;
	expires: number;
}

export interface DatasourcesTable {
	name: string;
	/** The whole object.DataSource as JSON. */
	config: string;
}

export interface VirtualNodesTable {
	uuid: string;
	path: string;
	meta: string;
	mtime: number | null;
}

export interface EncryptionKeysTable {
	id: string;
	label: string;
	owner: string;
	creation_date: number;
	sealed: string;
	info: string;
}

export interface NodesTable {
	uuid: string;
	ds: string;
	/** Uuid of the folder holding it; null for a datasource root. */
	parent: string | null;
	name: string;
	/** Datasource-relative, "" for the root. */
	path: string;
	type: "LEAF" | "COLLECTION";
	size: number;
	mtime: number;
	etag: string | null;
	mode: number | null;
	/** Where the content lives in the datasource's store. */
	key: string | null;
	/** JSON object: metadata namespace -> JSON-encoded value (node metadata lives here, as in the index today). */
	meta: string;
	/**
	 * Folders: the files and folders directly inside whose names do not start with a dot (Cells' ChildrenCount),
	 * kept by every write as sizes are, so that a listing's total and a folder's stat never count children.
	 */
	files: number;
	folders: number;
}

export interface VersioningPoliciesTable {
	uuid: string;
	/** The whole tree.VersioningPolicy as JSON. */
	policy: string;
}

export interface VersionsTable {
	id: string;
	node_uuid: string;
	ds: string;
	path: string;
	size: number;
	etag: string;
	mtime: number;
	owner: string;
	created_at: number;
	vds: string;
	key: string;
	policy: string;
	deleted_at: number | null;
	/** "delete" when captured as the content a delete removed; null for an overwrite. */
	reason: string | null;
}

export interface JobsTable {
	id: string;
	name: string;
	label: string;
	owner: string;
	owner_uuid: string;
	params: string;
	/** JSON snapshot of the user the job runs for. */
	user: string;
	inactive: Flag;
	created_at: number;
	modified_at: number;
}

export interface TasksTable {
	id: string;
	job_id: string;
	owner: string;
	/** Cells' task status names: Queued, Running, Finished, Error, Interrupted, Paused... */
	status: string;
	status_message: string;
	trigger_owner: string;
	start_time: number | null;
	end_time: number | null;
	progress: number;
	has_progress: Flag;
	can_stop: Flag;
	can_pause: Flag;
	/** The node that runs (or ran) it. */
	node: string;
	/** Unix ms, for ordering. */
	created: number;
	/** JSON: what the trigger gave a scheduler job's task (node paths, run parameters); null otherwise. */
	input: string | null;
}

export interface TaskLogsTable {
	id: string;
	job_id: string;
	task_id: string;
	owner: string;
	owner_uuid: string;
	ts: number;
	seq: number;
	level: string;
	msg: string;
	operation_uuid: string;
}

export interface LeasesTable {
	name: string;
	holder: string;
	/** Unix ms, on the database's clock. */
	expires_at: number;
}

export interface MarkersTable {
	/** One-off facts a service records (e.g. which defaults it seeded), by name. */
	name: string;
	value: string;
}

export interface MailQueueTable {
	id: string;
	recipient: string;
	subject: string;
	/** JSON of lib/mail's MailMessage. */
	message: string;
	/** queued | sending | sent | failed */
	status: string;
	attempts: number;
	max_attempts: number;
	/** Unix ms. */
	next_attempt_at: number;
	/** The node sending it, while `sending`. */
	claimed_by: string | null;
	/** Unix ms after which a `sending` row whose node died is taken again. */
	claimed_until: number | null;
	last_error: string | null;
	created_at: number;
	sent_at: number | null;
}

/** A declared user-metadata namespace (lib/db/user-meta). */
export interface UserMetaNamespacesTable {
	namespace: string;
	label: string;
	ord: number;
	indexable: Flag;
	json_definition: string;
	/** JSON array of resource policies (who may read and write values). */
	policies: string;
}

/** A user-metadata value on a node; `owner` is "" for shared values, the user's uuid for per-user ones. */
export interface UserMetaTable {
	uuid: string;
	node_uuid: string;
	namespace: string;
	owner: string;
	json_value: string;
	/** JSON array of resource policies. */
	policies: string;
	/** Unix seconds. */
	updated_at: number;
}

export interface UserMetaTagsTable {
	namespace: string;
	tag: string;
}

/** The system log and the audit trail (lib/db/logs). */
export interface LogsTable {
	id: string;
	/** sys | audit */
	kind: string;
	/** Unix ms. */
	ts: number;
	level: string;
	logger: string;
	node: string;
	msg: string;
	msg_id: string | null;
	user_name: string | null;
	user_uuid: string | null;
	remote_address: string | null;
	user_agent: string | null;
	node_uuid: string | null;
	node_path: string | null;
	ws_uuid: string | null;
	operation_uuid: string | null;
	span_uuid: string | null;
	/** JSON object. */
	extra: string | null;
}

/** Avatars (kind USER, owner = the user's uuid) and global logos (kind GLOBAL, owner = the slot posted to). */
export interface FrontendBinariesTable {
	kind: "USER" | "GLOBAL";
	owner: string;
	/** The binary's name as Cells gives it: 12 hex characters, a dot, the extension of its type. */
	id: string;
	mime: string;
	size: number;
	data: Buffer;
	created_at: number;
}

/** A user's TOTP second factor (RFC 6238): the secret sealed with a key derived from JWT_SECRET. */
export interface UserTotpTable {
	user_uuid: string;
	/** lib/auth/totp's sealed secret ("v1.<iv>.<tag>.<ciphertext>", base64url). */
	secret: string;
	status: "pending" | "active";
	created_at: number;
	enrolled_at: number | null;
	/** The last 30-second step a code was accepted for: a code works once. */
	last_step: number;
	/** Wrong codes in a row since the last good one or the last block. */
	failures: number;
	/** Unix seconds until which no code is accepted (after too many wrong ones); 0: none. */
	blocked_until: number;
}

/** One activity in one owner's box (migration 0006). */
export interface ActivitiesTable {
	/** Idempotency key: the same activity posted twice to the same box is one row. */
	key: string;
	/** NODE | USER */
	owner_type: string;
	owner_id: string;
	/** inbox | outbox */
	box: string;
	/** Orders a box: ms time zero-padded, then a unique suffix. */
	seq: string;
	/** Login of the actor. */
	actor: string;
	/** ms */
	published: number;
	/** JSON of the activity (lib/activity/model StoredActivity). */
	body: string;
}

export interface ActivitySubscriptionsTable {
	/** NODE | USER */
	object_type: string;
	object_id: string;
	/** Login of the subscriber. */
	user_id: string;
	/** JSON array of event names (read, change). */
	events: string;
}

export interface ActivityMarkersTable {
	user_id: string;
	/** lastread | lastsent */
	box: string;
	seq: string;
}

/** A public link (0003-shares). */
export interface ShareLinksTable {
	hash: string;
	workspace: string;
	owner_uuid: string;
	owner_login: string;
	template: string;
	access_start: number;
	access_end: number;
	download_limit: number;
	download_count: number;
	user_uuid: string;
	user_login: string;
	password_required: Flag;
	created_at: number;
	/** JSON object. */
	extra: string;
}

/** Search's folded names (migration 0002; SQLite adds an integer `id` for its FTS5 table). */
export interface SearchNamesTable {
	uuid: string;
	/** The name as it was folded (compared with nodes.name to find missed renames). */
	name: string;
	/** lib/strings foldText of the name. */
	folded: string;
	/** Lower-case extension, or the whole folded name when it has no dot (lib/search/content isTextFile's key). */
	ext: string;
}

/** Search's words of small text files (migration 0002). */
export interface SearchTextTable {
	uuid: string;
	/** The node's etag the words were read at ("" when it has none). */
	etag: string;
	/** SQLite: space-separated words; PostgreSQL: text[]. Null while claimed, or when the file holds no text. */
	words: string | string[] | null;
	/** Unix ms when a replica claimed the file to read it; null once done. */
	claimed_at: number | null;
}

/** A leaf of the configuration tree (lib/config-tree). */
export interface ConfigEntriesTable {
	path: string;
	json_value: string;
	author: string;
	/** Unix ms. */
	updated_at: number;
}

/** An admin-defined job of the scheduler (lib/scheduler): its Cells definition as JSON. */
export interface SchedulerJobsTable {
	id: string;
	definition: string;
	inactive: Flag;
	/** Unix ms of the next scheduled run. */
	next_run: number | null;
	created_at: number;
	modified_at: number;
}

/** A definition a PUT replaced. */
export interface SchedulerJobVersionsTable {
	id: string;
	job_id: string;
	label: string;
	definition: string;
	created_at: number;
}

/** An admin-made node template (lib/templates/nodes). */
export interface NodeTemplatesTable {
	uuid: string;
	label: string;
	type: "LEAF" | "COLLECTION";
	name: string;
	size: number;
	policies: string;
	created_by: string;
	created_at: number;
}

/** One file or folder of a node template, its bytes copied in. */
export interface NodeTemplateEntriesTable {
	template_uuid: string;
	path: string;
	type: "LEAF" | "COLLECTION";
	size: number;
	etag: string;
	data: Buffer | null;
}

/** A metadata template (PUT /a/templates/meta). */
export interface MetaTemplatesTable {
	uuid: string;
	label: string;
	namespace: string;
	meta: string;
	policies: string;
	updated_at: number;
}

/** A registered OAuth2 client (lib/oauth2/clients): Cells' JSON without the secret, which is only hashed. */
export interface OAuth2ClientsTable {
	client_id: string;
	config: string;
	secret_hash: string | null;
	updated_at: number;
}

/** An OAuth2 connector (lib/oauth2/connectors), listed by position. */
export interface OAuth2ConnectorsTable {
	id: string;
	position: number;
	type: string;
	config: string;
	updated_at: number;
}

/** A scheduler template (PUT /a/scheduler/templates/...): its Cells JSON, by kind and name. */
export interface SchedulerTemplatesTable {
	kind: "job" | "action" | "selector";
	name: string;
	body: string;
	updated_by: string;
	/** Unix ms. */
	updated_at: number;
}

/** An external (LDAP) directory: Cells' authLdapServerConfig as JSON (lib/directories). */
export interface DirectoriesTable {
	config_id: string;
	config: string;
	/** Unix ms. */
	updated_at: number;
}

export interface Database {
	users: UsersTable;
	roles: RolesTable;
	workspaces: WorkspacesTable;
	acls: AclsTable;
	policy_groups: PolicyGroupsTable;
	ip_lists: IpListsTable;
	ip_states: IpStatesTable;
	sessions: SessionsTable;
	tokens: TokensTable;
	reset_keys: ResetKeysTable;
	selections: SelectionsTable;
	datasources: DatasourcesTable;
	virtual_nodes: VirtualNodesTable;
	encryption_keys: EncryptionKeysTable;
	nodes: NodesTable;
	versioning_policies: VersioningPoliciesTable;
	versions: VersionsTable;
	jobs: JobsTable;
	tasks: TasksTable;
	task_logs: TaskLogsTable;
	leases: LeasesTable;
	markers: MarkersTable;
	mail_queue: MailQueueTable;
	user_meta_namespaces: UserMetaNamespacesTable;
	user_meta: UserMetaTable;
	user_meta_tags: UserMetaTagsTable;
	logs: LogsTable;
	frontend_binaries: FrontendBinariesTable;
	user_totp: UserTotpTable;
	activities: ActivitiesTable;
	activity_subscriptions: ActivitySubscriptionsTable;
	activity_markers: ActivityMarkersTable;
	share_links: ShareLinksTable;
	search_names: SearchNamesTable;
	search_text: SearchTextTable;
	config_entries: ConfigEntriesTable;
	node_templates: NodeTemplatesTable;
	node_template_entries: NodeTemplateEntriesTable;
	meta_templates: MetaTemplatesTable;
	oauth2_clients: OAuth2ClientsTable;
	oauth2_connectors: OAuth2ConnectorsTable;
	scheduler_templates: SchedulerTemplatesTable;
	scheduler_jobs: SchedulerJobsTable;
	scheduler_job_versions: SchedulerJobVersionsTable;
	directories: DirectoriesTable;
}

export type TableName = keyof Database;
