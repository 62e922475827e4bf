// Typed seams between services: every internal action's name, params and result, every event's name and
// payload, as maps (one module per area). `call`, `emit` and `broadcast` take a broker or a context and
// check the name and the params at compile time; at run time they are the plain Moleculer calls.
// lib never imports services/ or mixins/: the types come from lib, the services implement them
// (test/unit/contracts.spec.ts checks every action named here exists in a service schema).
import type { CallingOptions } from "moleculer";
import type { TreeActions, TreeEvents } from "./tree";
import type { UsersActions } from "./users";
import type { TokensActions, TokensEvents } from "./tokens";
import type { DatasourcesActions, DatasourcesEvents } from "./datasources";
import type { VersionsActions, VersionsEvents } from "./versions";
import type { IdentityEvents } from "./identity";
import type { PolicyActions, PolicyEvents } from "./policy";
import type { AuthActions, AuthEvents } from "./auth";
import type { AclActions } from "./acl";
import type { JobsActions, JobsEvents } from "./jobs";
import type { AuditEvents } from "./audit";
import type { RolesActions } from "./roles";
import type { WorkspacesActions } from "./workspaces";
import type { EncryptionActions, EncryptionEvents } from "./encryption";
import type { SelectionsActions } from "./selections";
import type { UserMetaActions, UserMetaEvents } from "./usermeta";
import type { GraphActions } from "./graph";
import type { MailerActions, MailerEvents } from "./mailer";
import type { LogEvents } from "./log";
import type { MfaActions } from "./mfa";
import type { ActivityActions, ActivityEvents } from "./activity";
import type { ShareActions, ShareEvents } from "./share";
import type { ConfigActions, ConfigEvents } from "./config";
import type { OAuth2Actions } from "./oauth2";
import type { SchedulerTemplatesActions } from "./scheduler-templates";
import type { DirectoriesActions } from "./directories";

export type * from "./tree";
export type * from "./users";
export type * from "./tokens";
export type * from "./datasources";
export type * from "./versions";
export type * from "./selections";
export type * from "./identity";
export type * from "./policy";
export type * from "./roles";
export type * from "./workspaces";
export type * from "./encryption";
export type * from "./auth";
export type * from "./usermeta";
export type * from "./graph";
export type * from "./acl";
export type * from "./jobs";
export type * from "./audit";
export type * from "./mailer";
export type * from "./mfa";
export type * from "./activity";
export type * from "./share";
export type * from "./log";
export type * from "./config";
export type * from "./oauth2";
export type * from "./scheduler-templates";
export type * from "./directories";

export interface Actions extends TreeActions, UsersActions, TokensActions, DatasourcesActions, VersionsActions, SelectionsActions, RolesActions, WorkspacesActions, EncryptionActions, PolicyActions, AuthActions, AclActions, JobsActions, UserMetaActions, GraphActions, MailerActions, MfaActions, ActivityActions, ShareActions, ConfigActions, OAuth2Actions, SchedulerTemplatesActions, DirectoriesActions {}
export interface Events extends TreeEvents, TokensEvents, DatasourcesEvents, VersionsEvents, IdentityEvents, PolicyEvents, EncryptionEvents, AuthEvents, JobsEvents, AuditEvents, UserMetaEvents, MailerEvents, ActivityEvents, ShareEvents, LogEvents, ConfigEvents {}

export type ActionName = keyof Actions;
export type EventName = keyof Events;
export type ParamsOf<A extends ActionName> = Actions[A]["params"];
export type ResultOf<A extends ActionName> = Actions[A]["result"];

/** A broker or a context (both call actions). */
export interface Caller {
	call<T, P>(action: string, params?: P, opts?: CallingOptions): Promise<T>;
}
/** A broker or a context (both emit and broadcast events). */
export interface Emitter {
	emit<D>(event: string, data?: D, opts?: Record<string, unknown>): Promise<void>;
	broadcast<D>(event: string, data?: D, opts?: Record<string, unknown>): Promise<void>;
}

/** Calls an action as a given user (the /io gateway's and the job runners' dependencies). */
export interface UserCaller<U> {
	call<A extends ActionName>(action: A, params: ParamsOf<A>, user: U): Promise<ResultOf<A>>;
}

/** `caller.call(action, params, opts)`, with the action's params and result types. */
export function call<A extends ActionName>(caller: Caller, action: A, params: ParamsOf<A>, opts?: CallingOptions): Promise<ResultOf<A>> {
	return caller.call<ResultOf<A>, ParamsOf<A>>(action, params, opts);
}
/** `emitter.emit(event, payload)` (one instance of each service gets it), with the event's payload type. */
export function emit<E extends EventName>(emitter: Emitter, event: E, payload: Events[E]): Promise<void> {
	return emitter.emit(event, payload);
}
/** `emitter.broadcast(event, payload)` (every instance gets it), with the event's payload type. */
export function broadcast<E extends EventName>(emitter: Emitter, event: E, payload: Events[E]): Promise<void> {
	return emitter.broadcast(event, payload);
}

/** A broker (its registry): whether any node of the cluster runs a service now. */
export interface RegistryHolder {
	registry: { hasService(fullName: string, nodeID: string): boolean };
}
/**
 * Whether any node runs the service `name`. Moleculer's typings make the node id required; at run time it is
 * optional (any node), which is what every caller here means.
 */
export function serviceRuns(broker: RegistryHolder, name: string): boolean {
	return broker.registry.hasService(name, undefined as unknown as string);
}
/** Whether the node `nodeID` runs the service `name` (a scan of the registry: callers asking often cache it). */
export function serviceRunsOn(broker: RegistryHolder, name: string, nodeID: string): boolean {
	return broker.registry.hasService(name, nodeID);
}
