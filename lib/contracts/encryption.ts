// encryption — internal actions (a datasource's key material for its store, whether a key exists) and the
// `encryption.changed` event.
export interface EncryptionActions {
	/** The key's material, base64. */
	"encryption.keyMaterial": { params: { id: string }; result: string };
	"encryption.exists": { params: { id: string }; result: boolean };
}

/** `encryption.changed`: a key was created, deleted or imported (caches of key material and opened stores). */
export interface EncryptionChange {
	KeyID: string;
}

export interface EncryptionEvents {
	"encryption.changed": EncryptionChange;
}
