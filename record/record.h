#pragma once

/* record/: the window recorder and the safe-output library it shares with
 * screenshots (DESIGN.md section 8). No X11 or libav types here. */

#include <stddef.h>

/* Safe output: the file is written in a private 0700 staging directory next
 * to the destination, created O_CREAT|O_EXCL|O_NOFOLLOW 0600, fsynced, then
 * published with link() (never replacing anything, symlinks included). */
struct safe_output;

/** Check `path` (absolute, parent exists and is canonical with no symlink,
 *  under one of roots) and that nothing exists there; create the staging
 *  file. Returns 0, -EINVAL (bad path; reason in err), -EEXIST (output
 *  exists), or -errno. On success *out owns the staging file. */
int safe_output_open(const char* path, char* const* roots, int n_roots,
		struct safe_output** out, char* err, size_t err_size);
/** The staging file's descriptor (owned by self) and path (for libav). */
int safe_output_fd(const struct safe_output* self);
const char* safe_output_staging_path(const struct safe_output* self);
/** The destination path. */
const char* safe_output_path(const struct safe_output* self);
/** fsync, publish without replacing, remove the staging dir, free self.
 *  Returns 0 or -errno (-EEXIST if the destination appeared meanwhile);
 *  on failure the staging is removed too. */
int safe_output_publish(struct safe_output* self);
/** Remove the staging and free self. NULL-safe. */
void safe_output_abort(struct safe_output* self);
/** Write all of buf to the staging file; 0 or -errno (e.g. -ENOSPC). */
int safe_output_write(struct safe_output* self, const void* buf, size_t len);
/** Remove staging directories left by a crash (kill -9) under these dirs. */
void safe_output_cleanup_stale(char* const* dirs, int n_dirs);
