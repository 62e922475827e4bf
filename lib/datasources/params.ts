// Validation schemas (fastest-validator) of the datasource actions' parameters: object.DataSource as Cells'
// OpenAPI spells it, with bounds on every string.
import { ENCRYPTION_MODES, STORAGE_TYPES } from "./model";

export const str = (max = 1024) => ({ type: "string", optional: true, max }) as const;
export const bool = { type: "boolean", optional: true } as const;
export const int32 = { type: "number", optional: true, integer: true } as const;
export const dataSourceProps = {
	Disabled: bool,
	StorageType: { type: "enum", optional: true, values: [...STORAGE_TYPES] },
	StorageConfiguration: { type: "record", optional: true, key: { type: "string", max: 64 }, value: { type: "string", max: 4096 } },
	ObjectsServiceName: str(255),
	ObjectsHost: str(255),
	ObjectsPort: int32,
	ObjectsSecure: bool,
	ObjectsBucket: str(255),
	ObjectsBaseFolder: str(),
	ApiKey: str(),
	ApiSecret: str(),
	PeerAddress: str(255),
	Watch: bool,
	FlatStorage: bool,
	SkipSyncOnRestart: bool,
	EncryptionMode: { type: "enum", optional: true, values: [...ENCRYPTION_MODES] },
	EncryptionKey: str(255),
	VersioningPolicyName: str(255),
	CreationDate: int32,
	LastSynchronizationDate: int32,
} as const;
export const dataSourceParam = { type: "object", optional: true, props: { Name: str(255), ...dataSourceProps } } as const;
