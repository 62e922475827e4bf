// Validation schemas (fastest-validator) of the tree's actions, as Cells' OpenAPI spells their bodies.

export interface NodeIn {
	Path?: string;
	Type?: "UNKNOWN" | "LEAF" | "COLLECTION";
	Uuid?: string;
}

export const nodeList = { type: "array", items: "object", min: 1, max: 1000 } as const;
export const bulkParams = {
	NodePaths: { type: "array", optional: true, items: "string", max: 1000 },
	Offset: { type: "number", optional: true, integer: true, min: 0 },
	Limit: { type: "number", optional: true, integer: true, min: 0, max: 10_000 },
	AllMetaProviders: { type: "boolean", optional: true },
	Versions: { type: "boolean", optional: true },
	SortField: { type: "string", optional: true, max: 64 },
	SortDirDesc: { type: "boolean", optional: true },
	Filters: { type: "record", optional: true },
} as const;
