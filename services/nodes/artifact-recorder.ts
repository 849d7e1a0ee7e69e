/** What the blob artifact store reports about bytes it has just stored. */
export interface RecordedArtifact {
  /** The blob store key, e.g. `runs/<runId>/<uuid>.png`. */
  blobKey: string;
  mimeType: string;
  sizeBytes: number;
  /** The artifact envelope's metadata (`{}` when it has none). */
  metadata: Record<string, unknown>;
  /**
   * When the retention sweeper may delete the blob; also the expiry of the signed URL handed out
   * for it. Null: never (recipe assets, which live as long as their workflow).
   */
  expiresAt: Date | null;
}

/**
 * The port through which the artifact store writes down what it stored, so that the retention
 * sweeper can find expired blobs later. The store implements it per run (`ArtifactRepository`).
 * A rejected `record` fails the `put`: an unrecorded blob would never be deleted.
 */
export interface ArtifactRecorder {
  record(entry: RecordedArtifact): Promise<void>;
}
