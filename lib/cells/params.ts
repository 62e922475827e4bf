// Validation shapes shared by Cells' IDM search requests (users, roles, workspaces, ACLs): the same paging,
// combination and counting fields everywhere.
export const searchParams = {
	Queries: { type: "array", optional: true, items: "object", max: 1000 },
	ResourcePolicyQuery: { type: "object", optional: true },
	Offset: { type: "number", optional: true, integer: true, min: 0 },
	Limit: { type: "number", optional: true, integer: true, min: 0 },
	Operation: { type: "enum", optional: true, values: ["OR", "AND"] },
	GroupBy: { type: "number", optional: true, integer: true },
	CountOnly: { type: "boolean", optional: true },
} as const;
