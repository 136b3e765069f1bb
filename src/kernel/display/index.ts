// The bridge to the notebook: finds the tslab kernel's own tslab instance and sends MIME
// bundles as display_data / update_display_data, throttled and coalesced (tslab drops bursts).
// Contract (implementation pending): see the interfaces below.
import type { MimeBundle } from "../../protocol";

/** One output area that can be replaced in place. */
export interface LiveDisplay {
  /** Replaces the output. Calls are coalesced: at most one send per interval, the last bundle wins. */
  update(bundle: MimeBundle): void;
  /** Sends the last bundle now (if one is pending) and resolves when it has been handed to the kernel. */
  flush(): Promise<void>;
}

export type { MimeBundle };
