// datasources — internal actions (no REST route) and the `datasources.changed` event.
import type { DataSource, TreeNode } from "../datasources/model";
import type { ResolutionUser } from "../datasources/resolution";
import type { RegistryDeps } from "../datasources/registry";

export interface DatasourcesActions {
	"datasources.setFlat": { params: { name: string }; result: { changed: boolean } };
	"datasources.get": { params: { name: string }; result: DataSource };
	"datasources.list": { params: Record<string, never>; result: DataSource[] };
	"datasources.virtualNodes": { params: Record<string, never>; result: TreeNode[] };
	"datasources.resolveVirtual": { params: { uuid: string; user: ResolutionUser }; result: { datasource: string; path: string } };
	"datasources.claimHolder": { params: { name: string; node: string }; result: DataSource };
	"datasources.ensureDefaults": { params: Record<string, never>; result: { Created: string[] } };
}

/** `datasources.changed`: a datasource (by name) or a virtual node (by uuid) was created, changed or deleted. */
export type DatasourcesChanged = Parameters<RegistryDeps["changed"]>[0];

export interface DatasourcesEvents {
	"datasources.changed": DatasourcesChanged;
}
