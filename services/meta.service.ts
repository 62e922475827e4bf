/**
 * meta — node metadata through Cells' Meta API: `POST /meta/get|set|delete/{NodePath}`. Stateless: the values
 * live on the nodes in the tree index (so they follow moves and copies); this service checks and forwards.
 * Emits nothing itself (the tree emits `tree.changed` type "meta").
 */

import type { Context, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { NotFoundError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { checkJsonMeta, checkNamespace } from "../lib/tree/meta";
import { call } from "../lib/contracts";

const nodePath = { type: "string", min: 1, max: 8192 } as const;
const namespaces = { type: "array", optional: true, items: { type: "string", max: 128 }, max: 100 } as const;

// No methods, no state: `this` is a plain Service, so a stray `this.x` fails to compile.
const MetaService: ServiceSchema<ServiceSettingSchema, object, object> = {
	name: "meta",
	settings: { rest: "/" },
	actions: {
		get: {
			rest: "POST /meta/get/*NodePath",
			read: true,
			params: { NodePath: nodePath, Namespace: namespaces },
			async handler(ctx: Context<{ NodePath: string; Namespace?: string[] }, Meta>) {
				requireUser(ctx);
				const r = await call(ctx, "tree.stat", { Node: ctx.params.NodePath });
				const wanted = ctx.params.Namespace?.filter((n) => n !== "*");
				if (!wanted?.length || !r.Node.MetaStore) return r.Node;
				const meta = Object.fromEntries(Object.entries(r.Node.MetaStore).filter(([k]) => k === "name" || wanted.includes(k)));
				return { ...r.Node, MetaStore: meta };
			},
		},
		set: {
			rest: "POST /meta/set/*NodePath",
			params: { NodePath: nodePath, Metadatas: { type: "array", items: { type: "object", props: { Namespace: "string", JsonMeta: "string" } }, min: 1, max: 100 } },
			async handler(ctx: Context<{ NodePath: string; Metadatas: { Namespace: string; JsonMeta: string }[] }, Meta>) {
				requireUser(ctx);
				const set: Record<string, string> = {};
				for (const m of ctx.params.Metadatas) set[checkNamespace(m.Namespace)] = checkJsonMeta(m.Namespace, m.JsonMeta);
				return call(ctx, "tree.setMeta", { Path: ctx.params.NodePath, set });
			},
		},
		remove: {
			rest: "POST /meta/delete/*NodePath",
			params: { NodePath: nodePath, Namespace: { ...namespaces, optional: false, min: 1 } },
			async handler(ctx: Context<{ NodePath: string; Namespace: string[] }, Meta>) {
				requireUser(ctx);
				const node = await call(ctx, "tree.setMeta", { Path: ctx.params.NodePath, remove: ctx.params.Namespace.map(checkNamespace) });
				if (!node) throw new NotFoundError(`${ctx.params.NodePath} not found`, "node.notfound");
				return node;
			},
		},
	},
};

export = MetaService;
