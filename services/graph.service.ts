/**
 * graph — Cells' `/graph/*`: what the caller and another user share (cells, groups, teams), the caller's
 * workspaces and their access, and node recommendations (bookmarks, recent files, cells and links shared with
 * them). Logic in lib/graph; stores nothing.
 * Calls: `workspaces.accessible`, `users.authInfo`, `users.byLogin`, `roles.getMany`, `tree.recent`,
 *        `tree.statUuids`, `tree.stats`, `user-meta.bookmarkedUuids` (when a user-meta service runs).
 * Emits and consumes nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Identity, Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { DEFAULT_RECOMMEND_LIMIT, Graph, MAX_RECOMMEND_LIMIT } from "../lib/graph/graph";
import { call, serviceRuns } from "../lib/contracts";

interface GraphVars {
	graph: Graph;
}
type GraphThis = Service & GraphVars;

const withUser = (user: Identity) => ({ meta: { user } });

const GraphService: ServiceSchema<ServiceSettingSchema, Record<string, never>, GraphVars> = {
	name: "graph",
	settings: { rest: "/" },
	actions: {
		relation: {
			read: true,
			rest: "GET /graph/relation/:UserId",
			params: { UserId: { type: "string", min: 1, max: 255 } },
			async handler(this: GraphThis, ctx: Context<{ UserId: string }, Meta>) {
				return this.graph.relation(requireUser(ctx), ctx.params.UserId);
			},
		},
		state: {
			read: true,
			rest: "GET /graph/state/:Segment",
			params: { Segment: { type: "string", min: 1, max: 255 } },
			async handler(this: GraphThis, ctx: Context<{ Segment: string }, Meta>) {
				return this.graph.state(requireUser(ctx), ctx.params.Segment);
			},
		},
		recommend: {
			rest: "POST /graph/recommend",
			params: {
				Category: { type: "string", optional: true, max: 64 },
				Limit: { type: "number", optional: true, integer: true, min: 0, max: MAX_RECOMMEND_LIMIT },
				// Cells' neighbour and segment hints: every recommendation here is for the caller as a whole.
				Neighbor: { type: "string", optional: true, max: 255 },
				Segment: { type: "string", optional: true, max: 255 },
			},
			async handler(this: GraphThis, ctx: Context<{ Category?: string; Limit?: number }, Meta>) {
				return { Nodes: await this.graph.recommend(requireUser(ctx), ctx.params.Category, ctx.params.Limit || DEFAULT_RECOMMEND_LIMIT) };
			},
		},
	},
	created(this: GraphThis) {
		const broker = this.broker;
		this.graph = new Graph({
			accessible: (roles) => call(broker, "workspaces.accessible", { roles }),
			authInfo: (uuid) => call(broker, "users.authInfo", { uuid }),
			byLogin: (login) => call(broker, "users.byLogin", { login }).catch((e: { code?: number }) => (e.code === 404 ? null : Promise.reject(e))),
			roles: (uuids) => call(broker, "roles.getMany", { uuids }),
			recent: async (user, limit) => (await call(broker, "tree.recent", { Limit: limit }, withUser(user))).Nodes,
			bookmarks: async (user, limit) => {
				if (!serviceRuns(broker, "user-meta")) return [];
				const { NodeUuids } = await call(broker, "user-meta.bookmarkedUuids", { Limit: limit }, withUser(user));
				return NodeUuids.length ? (await call(broker, "tree.statUuids", { Uuids: NodeUuids }, withUser(user))).Nodes : [];
			},
			stat: async (user, paths) => (await call(broker, "tree.stats", { NodePaths: paths }, withUser(user))).Nodes ?? [],
		});
	},
};

export = GraphService;
