// The validation schema (fastest-validator) of the resource policies a caller may send with a template or a
// metadata namespace (Cells' ServiceResourcePolicy), shared so that both accept the same shapes and sizes.

export const policiesParam = {
	type: "array",
	optional: true,
	max: 100,
	items: {
		type: "object",
		props: {
			id: { type: "any", optional: true },
			Resource: { type: "string", optional: true, max: 512 },
			Action: { type: "enum", optional: true, values: ["ANY", "OWNER", "READ", "WRITE", "EDIT_RULES"] },
			Subject: { type: "string", optional: true, max: 512 },
			Effect: { type: "enum", optional: true, values: ["deny", "allow"] },
			JsonConditions: { type: "string", optional: true, max: 8192 },
		},
	},
} as const;
